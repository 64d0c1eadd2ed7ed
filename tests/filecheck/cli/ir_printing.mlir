// IR dumps around passes go to stderr behind comment banners; stdout keeps only the result.
// RUN: %crane-opt %s -p cse,dce --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER
// RUN: %crane-opt %s -p cse,dce --print-ir-before=cse 2>&1 >/dev/null | filecheck %s --check-prefix=BEFORE
// RUN: %crane-opt %s -p cse,dce,cse --print-ir-after-change 2>&1 >/dev/null | filecheck %s --check-prefix=CHANGE
// RUN: %crane-opt %s -p 'builtin.module(test.func(cse))' --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=NESTED

// AFTER:      // -----// IR Dump After cse //----- //
// AFTER-NEXT: builtin.module {
// AFTER:      %[[X:.*]] = test.addi
// AFTER-NOT:  test.addi
// AFTER:      // -----// IR Dump After dce //----- //
// AFTER-NEXT: builtin.module {
// AFTER-NOT:  test.muli
// AFTER:      test.return

// BEFORE:      // -----// IR Dump Before cse //----- //
// BEFORE-NEXT: builtin.module {
// BEFORE:      test.addi
// BEFORE-NEXT: test.addi
// BEFORE-NOT:  IR Dump

// Only the passes that changed something: the first cse and dce, not the second cse.
// CHANGE:      // -----// IR Dump After cse //----- //
// CHANGE:      // -----// IR Dump After dce //----- //
// CHANGE-NOT:  IR Dump

// NESTED:      // -----// IR Dump After cse //----- //
// NESTED-NEXT: test.func @f(

test.func @f(%a: i32) -> i32 {
  %x = test.addi %a, %a : i32
  %y = test.addi %a, %a : i32
  %dead = test.muli %x, %y : i32
  test.return %x : i32
}
