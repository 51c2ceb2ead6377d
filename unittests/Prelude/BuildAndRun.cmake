# cmake -DCXX=... -DOUT=... -DSOURCES=a.cpp;b.cpp -DINCLUDE=dir -P BuildAndRun.cmake
# Compiles a GoogleTest program with the given compiler (warnings are
# errors) and runs it; used to test the semantics library with a compiler
# other than the project's.
execute_process(
  COMMAND ${CXX} -std=c++17 -O1 -Wall -Wextra -Werror -I${INCLUDE} ${SOURCES}
          -lgtest -lgtest_main -pthread -o ${OUT}
  RESULT_VARIABLE built)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "${CXX} could not build ${OUT}")
endif()
execute_process(COMMAND ${OUT} RESULT_VARIABLE ran)
if(NOT ran EQUAL 0)
  message(FATAL_ERROR "${OUT} failed")
endif()
