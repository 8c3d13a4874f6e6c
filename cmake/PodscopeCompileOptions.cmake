# Warnings and sanitizers shared by every Podscope target.
add_library(podscope_compile_options INTERFACE)
target_compile_options(podscope_compile_options INTERFACE
  -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
if(PODSCOPE_WERROR)
  target_compile_options(podscope_compile_options INTERFACE -Werror)
endif()

if(PODSCOPE_SANITIZE)
  string(REPLACE ";" "," _podscope_san "${PODSCOPE_SANITIZE}")
  message(STATUS "Podscope: building with -fsanitize=${_podscope_san}")
  add_compile_options(-fsanitize=${_podscope_san} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_podscope_san})
endif()

find_program(PODSCOPE_CCACHE ccache)
if(PODSCOPE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER ${PODSCOPE_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${PODSCOPE_CCACHE})
endif()

install(TARGETS podscope_compile_options EXPORT podscopeTargets)
