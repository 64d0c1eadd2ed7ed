// Locations: parsed ops get their own file:line:col; explicit loc(...) of every kind is
// kept, printed with --print-debuginfo and parsed back; without the flag nothing is printed.
// RUN: %crane-opt %s --print-debuginfo | filecheck %s
// RUN: %crane-opt %s --print-debuginfo | %crane-opt - --print-debuginfo | filecheck %s --check-prefix=BACK
// RUN: %crane-opt %s --print-debuginfo --print-op-generic | %crane-opt - --print-debuginfo | filecheck %s --check-prefix=BACK
// RUN: %crane-opt %s | filecheck %s --check-prefix=NODEBUG

// CHECK-LABEL: test.func @locs() {
// CHECK-NEXT:    %{{.*}} = test.constant 1 : i32 loc("{{.*}}locations.mlir":17:8)
// CHECK-NEXT:    test.effect : () -> () loc("model.crn":3:7)
// CHECK-NEXT:    test.effect : () -> () loc("conv1")
// CHECK-NEXT:    test.effect : () -> () loc("conv1"("model.crn":4:1))
// CHECK-NEXT:    test.effect : () -> () loc("outer"("inner"("f.crn":1:2)))
// CHECK-NEXT:    test.effect : () -> () loc(fused["a.crn":1:1, "b"])
// CHECK-NEXT:    test.effect : () -> () loc(unknown)
test.func @locs() {
  %c = test.constant 1 : i32
  test.effect : () -> () loc("model.crn":3:7)
  test.effect : () -> () loc("conv1")
  test.effect : () -> () loc("conv1"("model.crn":4:1))
  test.effect : () -> () loc("outer"("inner"("f.crn":1:2)))
  test.effect : () -> () loc(fused["a.crn":1:1, "b"])
  test.effect : () -> () loc(unknown)
  test.return
}

// Parsed back, each op keeps the location it was printed with (not the position in the
// intermediate text).
// BACK-LABEL: test.func @locs() {
// BACK-NEXT:    %{{.*}} = test.constant 1 : i32 loc("{{.*}}locations.mlir":17:8)
// BACK-NEXT:    test.effect : () -> () loc("model.crn":3:7)
// BACK-NEXT:    test.effect : () -> () loc("conv1")
// BACK-NEXT:    test.effect : () -> () loc("conv1"("model.crn":4:1))
// BACK-NEXT:    test.effect : () -> () loc("outer"("inner"("f.crn":1:2)))
// BACK-NEXT:    test.effect : () -> () loc(fused["a.crn":1:1, "b"])
// BACK-NEXT:    test.effect : () -> () loc(unknown)
// BACK-NEXT:    test.return loc("{{.*}}locations.mlir":24:3)
// BACK-NEXT:  } loc("{{.*}}locations.mlir":16:1)

// NODEBUG-NOT: loc(
