# Embeds the device sources (src/kernels/**/*.cuh) into the library as string literals, so an
# installed binary compiles its kernels with NVRTC without a source tree.
# autogemm_embed_sources(OUT_CPP <file> BASE_DIR <dir> FILES <f>...) writes a .cpp defining
#   const autogemm::jit::EmbeddedFile autogemm::jit::kEmbeddedFiles[]; (name = path below BASE_DIR)
function(autogemm_embed_sources)
  cmake_parse_arguments(ARG "" "OUT_CPP;BASE_DIR" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${ARG_OUT_CPP}
    COMMAND ${CMAKE_COMMAND} -DOUT=${ARG_OUT_CPP} -DBASE=${ARG_BASE_DIR} "-DFILES=${ARG_FILES}"
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_sources_script.cmake
    DEPENDS ${ARG_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed_sources_script.cmake
    COMMENT "Embedding device sources"
    VERBATIM)
endfunction()
