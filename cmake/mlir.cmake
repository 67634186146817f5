# MLIR emitter (DESIGN §5): target ppcc_emit, a static library over the MLIR
# C API of Debian's libmlir-19-dev.
#
# Linking: Debian ships the C API only as static libMLIRCAPI*.a and the rest
# of MLIR/LLVM as the shared libMLIR.so / libLLVM.so. The imported CMake
# targets (MLIRCAPIIR, ...) would drag in the static MLIR libraries too
# (slow, huge links), so we link the few CAPI archives we call by file, and
# the C++ implementation through the two shared libraries.
#
#   cmake -S . -B build -DLLVM_DIR=/usr/lib/llvm-19/lib/cmake/llvm   (default)
if(NOT LLVM_DIR)
  set(LLVM_DIR /usr/lib/llvm-19/lib/cmake/llvm)
endif()
if(NOT MLIR_DIR)
  get_filename_component(MLIR_DIR "${LLVM_DIR}/../mlir" ABSOLUTE)
endif()
find_package(MLIR CONFIG REQUIRED)
message(STATUS "MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")

set(PPCC_MLIR_LIBDIR "${LLVM_LIBRARY_DIR}")
set(PPCC_MLIR_CAPI_LIBS
  MLIRCAPIExecutionEngine MLIRCAPIRegisterEverything MLIRCAPIIRDL MLIRCAPILinalg MLIRCAPITarget MLIRCAPIIR)
set(PPCC_MLIR_LINK)
foreach(lib ${PPCC_MLIR_CAPI_LIBS})
  find_library(PPCC_${lib}_PATH NAMES lib${lib}.a PATHS ${PPCC_MLIR_LIBDIR} NO_DEFAULT_PATH REQUIRED)
  list(APPEND PPCC_MLIR_LINK ${PPCC_${lib}_PATH})
endforeach()
find_library(PPCC_LIBMLIR NAMES MLIR PATHS ${PPCC_MLIR_LIBDIR} NO_DEFAULT_PATH REQUIRED)
find_library(PPCC_LIBLLVM NAMES LLVM PATHS ${PPCC_MLIR_LIBDIR} NO_DEFAULT_PATH REQUIRED)

# The ppcc IRDL dialect, embedded into the library as a C string so the
# binary needs no data file; the same file is installed for mlir-opt users.
set(PPCC_IRDL_FILE ${PROJECT_SOURCE_DIR}/src/emit/annotated/ppcc.irdl.mlir)
set(PPCC_IRDL_C ${CMAKE_CURRENT_BINARY_DIR}/ppcc_irdl_text.c)
add_custom_command(OUTPUT ${PPCC_IRDL_C}
  COMMAND ${CMAKE_COMMAND} -DIN=${PPCC_IRDL_FILE} -DOUT=${PPCC_IRDL_C} -DSYMBOL=ppcc_irdl_text
          -P ${PROJECT_SOURCE_DIR}/src/emit/annotated/embed_text.cmake
  DEPENDS ${PPCC_IRDL_FILE} ${PROJECT_SOURCE_DIR}/src/emit/annotated/embed_text.cmake
  COMMENT "Embedding the ppcc IRDL dialect")

file(GLOB PPCC_EMIT_SRC CONFIGURE_DEPENDS src/emit/*.c src/emit/*/*.c)
# The JIT (src/emit/exec/exec_jit.c) runs device code on the runtime; without
# the runtime only the emitter is built.
if(NOT TARGET ppcc_runtime)
  list(FILTER PPCC_EMIT_SRC EXCLUDE REGEX "exec_(glue_)?jit\\.c$")
endif()
# The emitter's objects, position independent: linked statically into the
# tests and benchmarks (ppcc_emit) and, for the ppcc command, into the
# loadable module libppcc_mlir.so, which the driver dlopens only for the
# commands that need MLIR (so --version and report start without loading
# MLIR/LLVM; src/driver/mlir_loader.c).
add_library(ppcc_emit_objs OBJECT ${PPCC_EMIT_SRC} ${PPCC_IRDL_C})
set_target_properties(ppcc_emit_objs PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(ppcc_emit_objs SYSTEM PRIVATE ${MLIR_INCLUDE_DIRS} ${LLVM_INCLUDE_DIRS})
target_link_libraries(ppcc_emit_objs PRIVATE ppcc_core)
target_compile_definitions(ppcc_emit_objs PRIVATE PPCC_IRDL_FILE="${PPCC_IRDL_FILE}")
if(TARGET ppcc_runtime)
  target_link_libraries(ppcc_emit_objs PRIVATE ppcc_runtime)
  target_compile_definitions(ppcc_emit_objs PRIVATE PPCC_HAVE_JIT=1)
endif()

add_library(ppcc_emit STATIC $<TARGET_OBJECTS:ppcc_emit_objs>)
target_link_libraries(ppcc_emit PUBLIC ppcc_core ${PPCC_MLIR_LINK} ${PPCC_LIBMLIR} ${PPCC_LIBLLVM} stdc++)
target_compile_definitions(ppcc_emit PUBLIC PPCC_IRDL_FILE="${PPCC_IRDL_FILE}")
if(TARGET ppcc_runtime)
  target_link_libraries(ppcc_emit PUBLIC ppcc_runtime)
  target_compile_definitions(ppcc_emit PUBLIC PPCC_HAVE_JIT=1)
endif()
set_target_properties(ppcc_emit PROPERTIES BUILD_RPATH "${PPCC_MLIR_LIBDIR}" INSTALL_RPATH "${PPCC_MLIR_LIBDIR}")

# ppcc core and runtime symbols come from the ppcc executable (exported).
add_library(ppcc_mlir MODULE $<TARGET_OBJECTS:ppcc_emit_objs>)
target_link_libraries(ppcc_mlir PRIVATE ${PPCC_MLIR_LINK} ${PPCC_LIBMLIR} ${PPCC_LIBLLVM} stdc++)
set_target_properties(ppcc_mlir PROPERTIES BUILD_RPATH "${PPCC_MLIR_LIBDIR}" INSTALL_RPATH "${PPCC_MLIR_LIBDIR}")
include(GNUInstallDirs)
install(TARGETS ppcc_mlir LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

install(FILES ${PPCC_IRDL_FILE} DESTINATION share/ppcc)
