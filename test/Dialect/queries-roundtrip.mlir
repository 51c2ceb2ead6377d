// RUN: enigma-opt %s | enigma-opt | FileCheck %s
// RUN: enigma-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: enigma-opt %s --mlir-print-op-generic | enigma-opt | FileCheck %s

// All eleven thread queries; the six per-dimension ones with x, y and z.

// CHECK-LABEL: enigma.kernel @queries()
enigma.kernel @queries() {
  // CHECK-NEXT: enigma.thread_position_in_grid <x>
  // CHECK-NEXT: enigma.thread_position_in_grid <y>
  // CHECK-NEXT: enigma.thread_position_in_grid <z>
  %0 = enigma.thread_position_in_grid <x>
  %1 = enigma.thread_position_in_grid <y>
  %2 = enigma.thread_position_in_grid <z>
  // CHECK-NEXT: enigma.thread_position_in_threadgroup <x>
  // CHECK-NEXT: enigma.thread_position_in_threadgroup <y>
  // CHECK-NEXT: enigma.thread_position_in_threadgroup <z>
  %3 = enigma.thread_position_in_threadgroup <x>
  %4 = enigma.thread_position_in_threadgroup <y>
  %5 = enigma.thread_position_in_threadgroup <z>
  // CHECK-NEXT: enigma.threadgroup_position_in_grid <x>
  // CHECK-NEXT: enigma.threadgroup_position_in_grid <y>
  // CHECK-NEXT: enigma.threadgroup_position_in_grid <z>
  %6 = enigma.threadgroup_position_in_grid <x>
  %7 = enigma.threadgroup_position_in_grid <y>
  %8 = enigma.threadgroup_position_in_grid <z>
  // CHECK-NEXT: enigma.threads_per_threadgroup <x>
  // CHECK-NEXT: enigma.threads_per_threadgroup <y>
  // CHECK-NEXT: enigma.threads_per_threadgroup <z>
  %9 = enigma.threads_per_threadgroup <x>
  %10 = enigma.threads_per_threadgroup <y>
  %11 = enigma.threads_per_threadgroup <z>
  // CHECK-NEXT: enigma.threads_per_grid <x>
  // CHECK-NEXT: enigma.threads_per_grid <y>
  // CHECK-NEXT: enigma.threads_per_grid <z>
  %12 = enigma.threads_per_grid <x>
  %13 = enigma.threads_per_grid <y>
  %14 = enigma.threads_per_grid <z>
  // CHECK-NEXT: enigma.threadgroups_per_grid <x>
  // CHECK-NEXT: enigma.threadgroups_per_grid <y>
  // CHECK-NEXT: enigma.threadgroups_per_grid <z>
  %15 = enigma.threadgroups_per_grid <x>
  %16 = enigma.threadgroups_per_grid <y>
  %17 = enigma.threadgroups_per_grid <z>
  // CHECK-NEXT: enigma.thread_index_in_threadgroup{{$}}
  // CHECK-NEXT: enigma.thread_index_in_simdgroup{{$}}
  // CHECK-NEXT: enigma.simdgroup_index_in_threadgroup{{$}}
  // CHECK-NEXT: enigma.threads_per_simdgroup{{$}}
  // CHECK-NEXT: enigma.simdgroups_per_threadgroup{{$}}
  %18 = enigma.thread_index_in_threadgroup
  %19 = enigma.thread_index_in_simdgroup
  %20 = enigma.simdgroup_index_in_threadgroup
  %21 = enigma.threads_per_simdgroup
  %22 = enigma.simdgroups_per_threadgroup
  // Every query is an i32 (Metal uint).
  // CHECK-NEXT: arith.addi %{{.*}}, %{{.*}} : i32
  %sum = arith.addi %0, %22 : i32
  enigma.return
}

// GENERIC: "enigma.kernel"() <{function_type = () -> (), sym_name = "queries"}>
// GENERIC: "enigma.thread_position_in_grid"() <{dim = #enigma.dim<x>}> : () -> i32
// GENERIC: "enigma.thread_position_in_grid"() <{dim = #enigma.dim<y>}> : () -> i32
// GENERIC: "enigma.thread_position_in_grid"() <{dim = #enigma.dim<z>}> : () -> i32
// GENERIC: "enigma.threadgroups_per_grid"() <{dim = #enigma.dim<z>}> : () -> i32
// GENERIC: "enigma.thread_index_in_threadgroup"() : () -> i32
// GENERIC: "enigma.simdgroups_per_threadgroup"() : () -> i32
// GENERIC: "enigma.return"() : () -> ()
