# Debian's MLIR config links every MLIR target to the shared libLLVM.so. The
# core must be self-contained (it travels to machines without LLVM), so point
# that entry at the static LLVM component libraries instead.
add_library(EnigmaStaticLLVM INTERFACE)
target_link_libraries(EnigmaStaticLLVM INTERFACE
  ${LLVM_LIBRARY_DIR}/libLLVMSupport.a
  ${LLVM_LIBRARY_DIR}/libLLVMDemangle.a)
find_package(ZLIB)
find_library(ZSTD_LIBRARY zstd)
if(ZLIB_FOUND)
  target_link_libraries(EnigmaStaticLLVM INTERFACE ZLIB::ZLIB)
endif()
if(ZSTD_LIBRARY)
  target_link_libraries(EnigmaStaticLLVM INTERFACE ${ZSTD_LIBRARY})
endif()
set(ENIGMA_STATIC_LLVM_LIBS EnigmaStaticLLVM)

get_property(_enigma_mlir_libs GLOBAL PROPERTY MLIR_ALL_LIBS)
foreach(_lib ${_enigma_mlir_libs})
  if(TARGET ${_lib})
    get_target_property(_deps ${_lib} INTERFACE_LINK_LIBRARIES)
    if(_deps)
      list(TRANSFORM _deps REPLACE "^LLVM$" "EnigmaStaticLLVM")
      set_target_properties(${_lib} PROPERTIES INTERFACE_LINK_LIBRARIES "${_deps}")
    endif()
  endif()
endforeach()
