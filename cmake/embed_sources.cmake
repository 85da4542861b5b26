# Embeds the device sources (src/kernels/**/*.cuh) into the library as string literals, so an
# installed binary compiles its kernels with NVRTC without a source tree.
# autogemm_embed_sources(OUT_CPP <file> BASE_DIR <dir> [SYMBOL <name>] FILES <f>...) writes a
# .cpp defining const autogemm::jit::EmbeddedFile autogemm::jit::<SYMBOL>[] (default
# kEmbeddedFiles; name = path below BASE_DIR) and kNum<SYMBOL without its k>, its count. The
# cost-model calibrations (data/cost-model/*.json) use the same with SYMBOL kEmbeddedCalibrations.
function(autogemm_embed_sources)
  cmake_parse_arguments(ARG "" "OUT_CPP;BASE_DIR;SYMBOL" "FILES" ${ARGN})
  if(NOT ARG_SYMBOL)
    set(ARG_SYMBOL kEmbeddedFiles)
  endif()
  add_custom_command(
    OUTPUT ${ARG_OUT_CPP}
    COMMAND ${CMAKE_COMMAND} -DOUT=${ARG_OUT_CPP} -DBASE=${ARG_BASE_DIR} "-DFILES=${ARG_FILES}"
            -DSYMBOL=${ARG_SYMBOL}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_sources_script.cmake
    DEPENDS ${ARG_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed_sources_script.cmake
    COMMENT "Embedding device sources"
    VERBATIM)
endfunction()
