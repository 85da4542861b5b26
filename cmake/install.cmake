include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS autogemm EXPORT autogemmTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/autogemm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(AUTOGEMM_BUILD_CLI)
  install(TARGETS autogemm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT autogemmTargets NAMESPACE autogemm::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/autogemm)
configure_package_config_file(cmake/autogemmConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/autogemmConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/autogemm)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/autogemmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/autogemmConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/autogemmConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/autogemm)
