// strip-debuginfo replaces every location (parsed positions and explicit loc(...)) by unknown.
// RUN: %crane-opt %s -p strip-debuginfo --print-debuginfo | filecheck %s
// RUN: %crane-opt %s --print-debuginfo | filecheck %s --check-prefix=KEPT

// CHECK-LABEL: test.func @f() {
// CHECK-NEXT:    test.effect : () -> () loc(unknown)
// CHECK-NEXT:    test.effect : () -> () loc(unknown)
// CHECK-NEXT:    test.return loc(unknown)
// CHECK-NEXT:  } loc(unknown)
// CHECK-NEXT:} loc(unknown)
// KEPT:        test.effect : () -> () loc("{{.*}}strip_debuginfo.mlir":14:3)
// KEPT-NEXT:   test.effect : () -> () loc(fused["a.crn":1:1, "x"])
test.func @f() {
  test.effect : () -> ()
  test.effect : () -> () loc(fused["a.crn":1:1, "x"])
  test.return
}
