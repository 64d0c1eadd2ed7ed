// cse merges identical pure ops (also when the duplicate is in a nested region, dominated
// by the first), never merges ops with effects, and keeps ops that differ in an attribute.
// RUN: %crane-opt %s -p cse | filecheck %s
// RUN: %crane-opt %s -p 'builtin.module(test.func(cse))' | filecheck %s

// CHECK-LABEL: test.func @pure(
// CHECK-SAME:      %[[A:.*]]: i32
// CHECK-NEXT:    %[[X:.*]] = test.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    %[[C1:.*]] = test.constant 1 : i32
// CHECK-NEXT:    %[[C2:.*]] = test.constant 2 : i32
// CHECK-NEXT:    %[[M:.*]] = test.muli %[[X]], %[[X]] : i32
// CHECK-NEXT:    %[[S:.*]] = test.addi %[[M]], %[[C1]] : i32
// CHECK-NEXT:    %[[T:.*]] = test.addi %[[M]], %[[C2]] : i32
// CHECK-NEXT:    test.return %[[S]], %[[T]] : i32, i32
test.func @pure(%a: i32) -> (i32, i32) {
  %x = test.addi %a, %a : i32
  %y = test.addi %a, %a : i32
  %c1 = test.constant 1 : i32
  %c2 = test.constant 2 : i32
  %c1b = test.constant 1 : i32
  %m = test.muli %x, %y : i32
  %s = test.addi %m, %c1 : i32
  %t = test.addi %m, %c2 : i32
  %u = test.addi %m, %c1b : i32
  test.return %s, %t : i32, i32
}

// CHECK-LABEL: test.func @effects(
// CHECK-SAME:      %[[A:.*]]: i32
// CHECK-NEXT:    %[[E1:.*]] = test.effect %[[A]] : (i32) -> i32
// CHECK-NEXT:    %[[E2:.*]] = test.effect %[[A]] : (i32) -> i32
// CHECK-NEXT:    test.effect %[[E1]], %[[E2]] : (i32, i32) -> ()
test.func @effects(%a: i32) {
  %e1 = test.effect %a : (i32) -> i32
  %e2 = test.effect %a : (i32) -> i32
  test.effect %e1, %e2 : (i32, i32) -> ()
  test.return
}

// The copy inside the region is dominated by the outer op and is replaced by it.
// CHECK-LABEL: test.func @nested(
// CHECK-SAME:      %[[A:.*]]: i32
// CHECK-NEXT:    %[[X:.*]] = test.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    test.region %[[X]] ({
// CHECK-NEXT:      %[[W:.*]] = test.muli %[[X]], %[[X]] : i32
// CHECK-NEXT:      test.effect %[[W]] : (i32) -> ()
// CHECK-NEXT:    }) : (i32) -> ()
// CHECK-NEXT:    test.return %[[X]] : i32
test.func @nested(%a: i32) -> i32 {
  %x = test.addi %a, %a : i32
  test.region %x ({
    %z = test.addi %a, %a : i32
    %w = test.muli %z, %x : i32
    test.effect %w : (i32) -> ()
  }) : (i32) -> ()
  test.return %x : i32
}

// Ops in sibling regions do not dominate each other: both stay.
// CHECK-LABEL: test.func @siblings(
// CHECK:         test.region
// CHECK-NEXT:      %[[P:.*]] = test.xori
// CHECK-NEXT:      test.effect %[[P]]
// CHECK:         test.region
// CHECK-NEXT:      %[[Q:.*]] = test.xori
// CHECK-NEXT:      test.effect %[[Q]]
test.func @siblings(%a: i32) {
  test.region ({
    %p = test.xori %a, %a : i32
    test.effect %p : (i32) -> ()
  }) : () -> ()
  test.region ({
    %q = test.xori %a, %a : i32
    test.effect %q : (i32) -> ()
  }) : () -> ()
  test.return
}

// Functions are separate scopes: identical ops in two functions are both kept.
// CHECK-LABEL: test.func @scope_a
// CHECK-NEXT:    test.constant 9 : i32
// CHECK-LABEL: test.func @scope_b
// CHECK-NEXT:    test.constant 9 : i32
test.func @scope_a() -> i32 {
  %c = test.constant 9 : i32
  test.return %c : i32
}
test.func @scope_b() -> i32 {
  %c = test.constant 9 : i32
  test.return %c : i32
}
