// print-op-stats writes a table of op counts to stderr and leaves the IR unchanged.
// RUN: %crane-opt %s -p print-op-stats 2>&1 | filecheck %s
// RUN: %crane-opt %s -p print-op-stats 2>/dev/null | filecheck %s --check-prefix=IR

// CHECK:      operation       count
// CHECK-NEXT: --------------  -----
// CHECK-NEXT: builtin.module      1
// CHECK-NEXT: test.addi           2
// CHECK-NEXT: test.constant       1
// CHECK-NEXT: test.func           2
// CHECK-NEXT: test.return         2
// CHECK-NEXT: total               8

// IR-LABEL: test.func @a
// IR-NEXT:    test.addi
// IR-NEXT:    test.addi
// IR-LABEL: test.func @b
test.func @a(%x: i32) -> i32 {
  %y = test.addi %x, %x : i32
  %z = test.addi %y, %y : i32
  test.return %z : i32
}
test.func @b() -> i32 {
  %c = test.constant 1 : i32
  test.return %c : i32
}
