# Helpers shared by the project's CMakeLists.

# add_enigma_unittest(<name> <sources...>): a GoogleTest executable linked
# with libenigma, registered with ctest.
function(add_enigma_unittest name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE enigma GTest::gtest GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  set_property(GLOBAL APPEND PROPERTY ENIGMA_UNITTESTS ${name})
endfunction()

# enigma_embed_text(<out.cpp> <namespace-function> <files...>): generates a
# C++ file defining `const std::vector<enigma::PreludeFile> &<function>()`
# with the text of each file, so runtimes need no install path.
function(enigma_embed_text out function)
  set(deps)
  set(args)
  foreach(f ${ARGN})
    list(APPEND deps ${f})
    list(APPEND args ${f})
  endforeach()
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DFUNCTION=${function}
            "-DFILES=${args}" -P ${PROJECT_SOURCE_DIR}/cmake/EnigmaEmbed.cmake
    DEPENDS ${deps} ${PROJECT_SOURCE_DIR}/cmake/EnigmaEmbed.cmake
    COMMENT "Embedding ${function}"
    VERBATIM)
endfunction()
