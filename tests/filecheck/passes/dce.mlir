// dce erases unused pure ops (transitively, also in nested regions) and keeps effect ops,
// terminators and everything used.
// RUN: %crane-opt %s -p dce | filecheck %s

// CHECK-LABEL: test.func @chain(
// CHECK-SAME:      %[[A:.*]]: i32
// CHECK-NEXT:    %[[E:.*]] = test.effect %[[A]] : (i32) -> i32
// CHECK-NEXT:    %[[K:.*]] = test.constant 4 : i32
// CHECK-NEXT:    %[[R:.*]] = test.addi %[[A]], %[[K]] : i32
// CHECK-NEXT:    test.region %[[R]] ({
// CHECK-NEXT:      test.effect %[[A]] : (i32) -> ()
// CHECK-NEXT:    }) : (i32) -> ()
// CHECK-NEXT:    test.return %[[R]] : i32
// CHECK-NEXT:  }
test.func @chain(%a: i32) -> i32 {
  %dead1 = test.constant 1 : i32
  %dead2 = test.addi %a, %dead1 : i32
  %dead3 = test.muli %dead2, %dead2 : i32
  %e = test.effect %a : (i32) -> i32
  %k = test.constant 4 : i32
  %r = test.addi %a, %k : i32
  test.region %r ({
    %inner_dead = test.subi %a, %a : i32
    test.effect %a : (i32) -> ()
  }) : (i32) -> ()
  test.return %r : i32
}
