// Custom and generic forms of every test-dialect op and of builtin.module, and both round trips.
// RUN: %crane-opt %s | filecheck %s
// RUN: %crane-opt %s | %crane-opt - | filecheck %s
// RUN: %crane-opt %s --print-op-generic | %crane-opt - | filecheck %s
// RUN: %crane-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: %crane-opt %s --print-op-generic | %crane-opt - --print-op-generic | filecheck %s --check-prefix=GENERIC

builtin.module @top attributes {test.note = "kept"} {
  test.func @all_ops(%a: i32, %b: i32) -> (i32, i32) attributes {test.inline} {
    %c = test.constant 3 : i32
    %n = test.constant -7 {tag = "neg"} : i64
    %s = test.addi %a, %c : i32
    %m = test.muli %s, %b : i32
    %d = test.subi %m, %a : i32
    %x = test.xori %d, %b {tag = 1} : i32
    %p = test.positive {value = 5} : () -> i32
    %e, %f = test.effect %a, %b {kind = #test.kind<write>} : (i32, i32) -> (i32, i32)
    test.effect : () -> ()
    %r = test.region %x ({
      %inner = test.addi %x, %a : i32
    }) : (i32) -> i64
    test.return %x, %f : i32, i32
  }
  test.func @nothing() {
    test.return
  }
}

// CHECK-LABEL: builtin.module @top attributes {test.note = "kept"} {
// CHECK-NEXT:    test.func @all_ops(%[[A:.*]]: i32, %[[B:.*]]: i32) -> (i32, i32) attributes {test.inline} {
// CHECK-NEXT:      %[[C:.*]] = test.constant 3 : i32
// CHECK-NEXT:      %{{.*}} = test.constant -7 {tag = "neg"} : i64
// CHECK-NEXT:      %[[S:.*]] = test.addi %[[A]], %[[C]] : i32
// CHECK-NEXT:      %[[M:.*]] = test.muli %[[S]], %[[B]] : i32
// CHECK-NEXT:      %[[D:.*]] = test.subi %[[M]], %[[A]] : i32
// CHECK-NEXT:      %[[X:.*]] = test.xori %[[D]], %[[B]] {tag = 1} : i32
// CHECK-NEXT:      %{{.*}} = test.positive {value = 5} : () -> i32
// CHECK-NEXT:      %{{.*}}, %[[F:.*]] = test.effect %[[A]], %[[B]] {kind = #test.kind<write>} : (i32, i32) -> (i32, i32)
// CHECK-NEXT:      test.effect : () -> ()
// CHECK-NEXT:      %{{.*}} = test.region %[[X]] ({
// CHECK-NEXT:        %{{.*}} = test.addi %[[X]], %[[A]] : i32
// CHECK-NEXT:      }) : (i32) -> i64
// CHECK-NEXT:      test.return %[[X]], %[[F]] : i32, i32
// CHECK-NEXT:    }
// CHECK-LABEL:   test.func @nothing() {
// CHECK-NEXT:      test.return
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// GENERIC-LABEL: "builtin.module"() ({
// GENERIC-NEXT:    "test.func"() ({
// GENERIC-NEXT:    ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32):
// GENERIC-NEXT:      %[[C:.*]] = "test.constant"() {value = 3} : () -> i32
// GENERIC-NEXT:      %{{.*}} = "test.constant"() {value = -7, tag = "neg"} : () -> i64
// GENERIC-NEXT:      %[[S:.*]] = "test.addi"(%[[A]], %[[C]]) : (i32, i32) -> i32
// GENERIC-NEXT:      %[[M:.*]] = "test.muli"(%[[S]], %[[B]]) : (i32, i32) -> i32
// GENERIC-NEXT:      %[[D:.*]] = "test.subi"(%[[M]], %[[A]]) : (i32, i32) -> i32
// GENERIC-NEXT:      %[[X:.*]] = "test.xori"(%[[D]], %[[B]]) {tag = 1} : (i32, i32) -> i32
// GENERIC-NEXT:      %{{.*}} = "test.positive"() {value = 5} : () -> i32
// GENERIC-NEXT:      %{{.*}}, %[[F:.*]] = "test.effect"(%[[A]], %[[B]]) {kind = #test.kind<write>} : (i32, i32) -> (i32, i32)
// GENERIC-NEXT:      "test.effect"() : () -> ()
// GENERIC-NEXT:      %{{.*}} = "test.region"(%[[X]]) ({
// GENERIC-NEXT:        %{{.*}} = "test.addi"(%[[X]], %[[A]]) : (i32, i32) -> i32
// GENERIC-NEXT:      }) : (i32) -> i64
// GENERIC-NEXT:      "test.return"(%[[X]], %[[F]]) : (i32, i32) -> ()
// GENERIC-NEXT:    }) {sym_name = "all_ops", function_type = (i32, i32) -> (i32, i32), test.inline} : () -> ()
// GENERIC-NEXT:    "test.func"() ({
// GENERIC-NEXT:      "test.return"() : () -> ()
// GENERIC-NEXT:    }) {sym_name = "nothing", function_type = () -> ()} : () -> ()
// GENERIC-NEXT:  }) {sym_name = "top", test.note = "kept"} : () -> ()
