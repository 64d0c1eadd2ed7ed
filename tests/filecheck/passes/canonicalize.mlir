// canonicalize applies the test dialect's patterns to a fixpoint: constant folding,
// x+0 / x*1 / x-0 / x^0 -> x, constants moved to the right of commutative ops; dead
// ops left behind are erased.
// RUN: %crane-opt %s -p canonicalize | filecheck %s
// RUN: %crane-opt %s -p canonicalize --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// (6 * 7 - 6) ^ 7 = 35, folded through three ops.
// CHECK-LABEL: test.func @fold() -> i32 {
// CHECK-NEXT:    %[[C:.*]] = test.constant 35 : i32
// CHECK-NEXT:    test.return %[[C]] : i32
// CHECK-NEXT:  }
test.func @fold() -> i32 {
  %a = test.constant 6 : i32
  %b = test.constant 7 : i32
  %m = test.muli %a, %b : i32
  %s = test.subi %m, %a : i32
  %x = test.xori %s, %b : i32
  test.return %x : i32
}

// CHECK-LABEL: test.func @neutral(
// CHECK-SAME:      %[[V:.*]]: i32
// CHECK-NEXT:    test.return %[[V]] : i32
// CHECK-NEXT:  }
test.func @neutral(%v: i32) -> i32 {
  %z = test.constant 0 : i32
  %o = test.constant 1 : i32
  %a = test.addi %v, %z : i32
  %b = test.muli %a, %o : i32
  %c = test.addi %z, %b : i32
  %d = test.subi %c, %z : i32
  %e = test.xori %d, %z : i32
  test.return %e : i32
}

// Commutative addi/muli get their constant on the right; subi is not commutative and
// 0 - x is not x.
// CHECK-LABEL: test.func @right(
// CHECK-SAME:      %[[V:.*]]: i32
// CHECK-NEXT:    %[[K:.*]] = test.constant 5 : i32
// CHECK-NEXT:    %[[A:.*]] = test.addi %[[V]], %[[K]] : i32
// CHECK-NEXT:    %[[M:.*]] = test.muli %[[A]], %[[K]] : i32
// CHECK-NEXT:    %[[Z:.*]] = test.constant 0 : i32
// CHECK-NEXT:    %[[S:.*]] = test.subi %[[Z]], %[[M]] : i32
// CHECK-NEXT:    test.return %[[S]] : i32
test.func @right(%v: i32) -> i32 {
  %k = test.constant 5 : i32
  %a = test.addi %k, %v : i32
  %m = test.muli %k, %a : i32
  %z = test.constant 0 : i32
  %s = test.subi %z, %m : i32
  test.return %s : i32
}

// Effect ops are not folded or erased.
// CHECK-LABEL: test.func @effects(
// CHECK:         test.effect
// CHECK-NEXT:    test.return
test.func @effects(%v: i32) {
  %z = test.constant 0 : i32
  test.effect %z : (i32) -> ()
  test.return
}

// STATS:      canonicalize
// STATS-NEXT:   (S) 6 dead-ops-erased
// STATS-NEXT:   (S) 3 pattern ConstantsToTheRight
// STATS-NEXT:   (S) 5 pattern DropNeutralOperand
// STATS-NEXT:   (S) 3 pattern FoldConstantArithmetic
