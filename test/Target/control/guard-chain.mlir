// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// A chain of ifs nested in each other (each without results or else, each
// ending with the next) prints flat from 8 links on: one do { } while
// (false) whose links exit with break, instead of a brace level per if
// (Metal's compiler, clang, refuses more than 256 nested brackets). Shorter
// chains, and nests where something follows an inner if (here the first,
// which leaves a chain of 7 below it), print nested.

// CHECK-LABEL: enigma_kernel_chain8(
// CHECK: do { // 8 nested ifs, flat
// CHECK-NEXT: if (!([[P0:v[0-9]+]])) break;
// CHECK-NEXT: o[{{.*}}] = 0.0f;
// CHECK-NEXT: bool [[P1:v[0-9]+]] = {{.*}};
// CHECK-NEXT: if (!([[P1]])) break;
// CHECK-NEXT: o[{{.*}}] = -1.0f;
// CHECK-COUNT-6: break;
// CHECK: o[{{.*}}] = -7.0f;
// CHECK-NEXT: } while (false);
// CHECK-NEXT: }

// CHECK-LABEL: enigma_kernel_chain7(
// CHECK-NOT: do {
// CHECK: if ({{v[0-9]+}}) {
// CHECK: }
// CHECK: {{^}}}

// CHECK-LABEL: enigma_kernel_not_a_chain(
// CHECK-NOT: do {
// CHECK: if ({{v[0-9]+}}) {
// CHECK: {{^}}}

enigma.kernel @chain8(%a: memref<?xf32> {enigma.name = "a"}, %o: memref<?xf32> {enigma.name = "o"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %a[%i] : memref<?xf32>
  %c0k = arith.constant 0.0 : f32
  %c1k = arith.constant -1.0 : f32
  %c2k = arith.constant -2.0 : f32
  %c3k = arith.constant -3.0 : f32
  %c4k = arith.constant -4.0 : f32
  %c5k = arith.constant -5.0 : f32
  %c6k = arith.constant -6.0 : f32
  %c7k = arith.constant -7.0 : f32
  %p0 = arith.cmpf ogt, %x, %c0k : f32
  scf.if %p0 {
    memref.store %c0k, %o[%i] : memref<?xf32>
    %p1 = arith.cmpf ogt, %x, %c1k : f32
    scf.if %p1 {
      memref.store %c1k, %o[%i] : memref<?xf32>
      %p2 = arith.cmpf ogt, %x, %c2k : f32
      scf.if %p2 {
        memref.store %c2k, %o[%i] : memref<?xf32>
        %p3 = arith.cmpf ogt, %x, %c3k : f32
        scf.if %p3 {
          memref.store %c3k, %o[%i] : memref<?xf32>
          %p4 = arith.cmpf ogt, %x, %c4k : f32
          scf.if %p4 {
            memref.store %c4k, %o[%i] : memref<?xf32>
            %p5 = arith.cmpf ogt, %x, %c5k : f32
            scf.if %p5 {
              memref.store %c5k, %o[%i] : memref<?xf32>
              %p6 = arith.cmpf ogt, %x, %c6k : f32
              scf.if %p6 {
                memref.store %c6k, %o[%i] : memref<?xf32>
                %p7 = arith.cmpf ogt, %x, %c7k : f32
                scf.if %p7 {
                  memref.store %c7k, %o[%i] : memref<?xf32>
                }
              }
            }
          }
        }
      }
    }
  }
  enigma.return
}

enigma.kernel @chain7(%a: memref<?xf32> {enigma.name = "a"}, %o: memref<?xf32> {enigma.name = "o"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %a[%i] : memref<?xf32>
  %c0k = arith.constant 0.0 : f32
  %c1k = arith.constant -1.0 : f32
  %c2k = arith.constant -2.0 : f32
  %c3k = arith.constant -3.0 : f32
  %c4k = arith.constant -4.0 : f32
  %c5k = arith.constant -5.0 : f32
  %c6k = arith.constant -6.0 : f32
  %p0 = arith.cmpf ogt, %x, %c0k : f32
  scf.if %p0 {
    memref.store %c0k, %o[%i] : memref<?xf32>
    %p1 = arith.cmpf ogt, %x, %c1k : f32
    scf.if %p1 {
      memref.store %c1k, %o[%i] : memref<?xf32>
      %p2 = arith.cmpf ogt, %x, %c2k : f32
      scf.if %p2 {
        memref.store %c2k, %o[%i] : memref<?xf32>
        %p3 = arith.cmpf ogt, %x, %c3k : f32
        scf.if %p3 {
          memref.store %c3k, %o[%i] : memref<?xf32>
          %p4 = arith.cmpf ogt, %x, %c4k : f32
          scf.if %p4 {
            memref.store %c4k, %o[%i] : memref<?xf32>
            %p5 = arith.cmpf ogt, %x, %c5k : f32
            scf.if %p5 {
              memref.store %c5k, %o[%i] : memref<?xf32>
              %p6 = arith.cmpf ogt, %x, %c6k : f32
              scf.if %p6 {
                memref.store %c6k, %o[%i] : memref<?xf32>
              }
            }
          }
        }
      }
    }
  }
  enigma.return
}

enigma.kernel @not_a_chain(%a: memref<?xf32> {enigma.name = "a"}, %o: memref<?xf32> {enigma.name = "o"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %a[%i] : memref<?xf32>
  %c0k = arith.constant 0.0 : f32
  %c1k = arith.constant -1.0 : f32
  %c2k = arith.constant -2.0 : f32
  %c3k = arith.constant -3.0 : f32
  %c4k = arith.constant -4.0 : f32
  %c5k = arith.constant -5.0 : f32
  %c6k = arith.constant -6.0 : f32
  %c7k = arith.constant -7.0 : f32
  %p0 = arith.cmpf ogt, %x, %c0k : f32
  scf.if %p0 {
    memref.store %c0k, %o[%i] : memref<?xf32>
    %p1 = arith.cmpf ogt, %x, %c1k : f32
    scf.if %p1 {
      memref.store %c1k, %o[%i] : memref<?xf32>
      %p2 = arith.cmpf ogt, %x, %c2k : f32
      scf.if %p2 {
        memref.store %c2k, %o[%i] : memref<?xf32>
        %p3 = arith.cmpf ogt, %x, %c3k : f32
        scf.if %p3 {
          memref.store %c3k, %o[%i] : memref<?xf32>
          %p4 = arith.cmpf ogt, %x, %c4k : f32
          scf.if %p4 {
            memref.store %c4k, %o[%i] : memref<?xf32>
            %p5 = arith.cmpf ogt, %x, %c5k : f32
            scf.if %p5 {
              memref.store %c5k, %o[%i] : memref<?xf32>
              %p6 = arith.cmpf ogt, %x, %c6k : f32
              scf.if %p6 {
                memref.store %c6k, %o[%i] : memref<?xf32>
                %p7 = arith.cmpf ogt, %x, %c7k : f32
                scf.if %p7 {
                  memref.store %c7k, %o[%i] : memref<?xf32>
                }
              }
            }
          }
        }
      }
    }
    memref.store %x, %o[%i] : memref<?xf32>
  }
  enigma.return
}
