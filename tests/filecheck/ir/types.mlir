// Types in operand, result and argument positions: tensors (ranked, `?`, rank 0), buffers
// in both memory spaces, every scalar.
// RUN: %crane-opt %s | filecheck %s
// RUN: %crane-opt %s | %crane-opt - | filecheck %s
// RUN: %crane-opt %s --print-op-generic | %crane-opt - | filecheck %s

// CHECK-LABEL: test.func @tensors(
// CHECK-SAME:      %[[T:.*]]: tensor<1x3x224x224xf32>, %[[D:.*]]: tensor<?x?xbf16>, %[[S:.*]]: tensor<f32>) -> tensor<?x?xbf16>
// CHECK-NEXT:    %[[R:.*]] = test.addi %[[D]], %[[D]] : tensor<?x?xbf16>
// CHECK-NEXT:    %{{.*}} = test.effect %[[T]], %[[S]] : (tensor<1x3x224x224xf32>, tensor<f32>) -> tensor<1x?xi8>
// CHECK-NEXT:    test.return %[[R]] : tensor<?x?xbf16>
test.func @tensors(%t: tensor<1x3x224x224xf32>, %d: tensor<?x?xbf16>, %s: tensor<f32>) -> tensor<?x?xbf16> {
  %r = test.addi %d, %d : tensor<?x?xbf16>
  %e = test.effect %t, %s : (tensor<1x3x224x224xf32>, tensor<f32>) -> tensor<1x?xi8>
  test.return %r : tensor<?x?xbf16>
}

// CHECK-LABEL: test.func @buffers(
// CHECK-SAME:      %{{.*}}: buffer<64x56xf32, sram>, %{{.*}}: buffer<1x64x56x56xf16, dram>)
// CHECK-NEXT:    %{{.*}} = test.effect %{{.*}}, %{{.*}} : (buffer<64x56xf32, sram>, buffer<1x64x56x56xf16, dram>) -> buffer<?xi32, sram>
test.func @buffers(%a: buffer<64x56xf32, sram>, %b: buffer<1x64x56x56xf16, dram>) {
  %e = test.effect %a, %b : (buffer<64x56xf32, sram>, buffer<1x64x56x56xf16, dram>) -> buffer<?xi32, sram>
  test.return
}

// CHECK-LABEL: test.func @scalars(
// CHECK-SAME:      i1, %{{.*}}: i8, %{{.*}}: i16, %{{.*}}: i32, %{{.*}}: i64, %{{.*}}: index, %{{.*}}: bf16, %{{.*}}: f16, %{{.*}}: f32, %{{.*}}: f64) -> (f64, i1)
// CHECK-NEXT:    test.return %{{.*}}, %{{.*}} : f64, i1
test.func @scalars(%a: i1, %b: i8, %c: i16, %d: i32, %e: i64, %f: index, %g: bf16, %h: f16, %i: f32, %j: f64) -> (f64, i1) {
  test.return %j, %a : f64, i1
}
