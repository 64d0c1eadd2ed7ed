// Ops of unknown dialects are kept, in the generic form, with --allow-unregistered-dialect,
// and their regions, attributes and results round-trip.
// RUN: %crane-opt %s --allow-unregistered-dialect | filecheck %s
// RUN: %crane-opt %s --allow-unregistered-dialect | %crane-opt - --allow-unregistered-dialect | filecheck %s
// RUN: %crane-opt %s --allow-unregistered-dialect --print-op-generic | %crane-opt - --allow-unregistered-dialect | filecheck %s
// RUN: not %crane-opt %s 2>&1 | filecheck %s --check-prefix=REJECT

// CHECK-LABEL: test.func @mixed(
// CHECK-SAME:      %[[A:.*]]: i32) -> i32
// CHECK-NEXT:    %[[X:.*]] = "foo.op"(%[[A]]) {mode = #foo.mode<fast>, n = 2} : (i32) -> i32
// CHECK-NEXT:    %{{.*}}, %{{.*}} = "foo.pair"() : () -> (i32, f32)
// CHECK-NEXT:    "foo.scope"() ({
// CHECK-NEXT:      %[[K:.*]] = test.constant 2 : i32
// CHECK-NEXT:      %[[S:.*]] = test.addi %[[K]], %[[K]] : i32
// CHECK-NEXT:      "foo.yield"(%[[S]]) : (i32) -> ()
// CHECK-NEXT:    }, {
// CHECK-NEXT:    }) : () -> ()
// CHECK-NEXT:    test.return %[[X]] : i32
test.func @mixed(%a: i32) -> i32 {
  %x = "foo.op"(%a) {mode = #foo.mode<fast>, n = 2} : (i32) -> i32
  %p, %q = "foo.pair"() : () -> (i32, f32)
  "foo.scope"() ({
    %k = test.constant 2 : i32
    %s = test.addi %k, %k : i32
    "foo.yield"(%s) : (i32) -> ()
  }, {
  }) : () -> ()
  test.return %x : i32
}

// REJECT: unregistered.mlir:20:8: error: unregistered operation 'foo.op' (use --allow-unregistered-dialect to accept it)
