// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax -DENIGMA_FC_0=3 -DENIGMA_FC_2=1.5f %t.cpp

// Function constants are declared once at file scope in MSL and read from
// the macros the runtimes define on CPU and CUDA.
// MSL: constant int enigma_fc_0 {{\[\[}}function_constant(0){{\]\]}};
// MSL-NEXT: constant float enigma_fc_2 {{\[\[}}function_constant(2){{\]\]}};
// MSL-NOT: function_constant(0)
// MSL-LABEL: kernel void enigma_kernel_scale(
// MSL: uint {{v[0-9]+}} = (uint)enigma_fc_0;
// MSL: float {{v[0-9]+}} = (float)enigma_fc_2;
// CUDA: #ifndef ENIGMA_FC_0
// CUDA-NEXT: #error "function constant 0 (i32) was not given"
// CUDA: uint {{v[0-9]+}} = (uint)ENIGMA_FUNCTION_CONSTANT(0);
// CPP: #ifndef ENIGMA_FC_2
// CPP: float {{v[0-9]+}} = (float)(ENIGMA_FC_2);
enigma.kernel @scale(%a: memref<?xf32> {enigma.name = "a", enigma.dtype = "f32"}) {
  %k = enigma.function_constant 0 "i32" : i32
  %k2 = enigma.function_constant 0 "i32" : i32
  %s = enigma.function_constant 2 "f32" : f32
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %a[%i] : memref<?xf32>
  %kk = arith.addi %k, %k2 : i32
  %kf = arith.sitofp %kk : i32 to f32
  %y = arith.mulf %x, %kf : f32
  %z = arith.addf %y, %s : f32
  memref.store %z, %a[%i] : memref<?xf32>
  enigma.return
}
