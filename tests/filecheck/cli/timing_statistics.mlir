// --timing prints a per-pass wall-time tree and --pass-statistics the pass counters, on stderr.
// RUN: %crane-opt %s -p 'builtin.module(test.func(cse))' --timing 2>&1 >/dev/null | filecheck %s --check-prefix=TIME
// RUN: %crane-opt %s -p cse --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// TIME:      Execution time report
// TIME:      Total: {{[0-9.]+}} ms
// TIME:      'builtin.module' pipeline
// TIME-NEXT: {{^ +[0-9.]+ +[0-9.]+% +}}'test.func' pipeline
// TIME-NEXT: {{^ +[0-9.]+ +[0-9.]+% +}}cse
// TIME-NEXT: (V) verifier

// STATS:      Pass statistics report
// STATS:      cse
// STATS-NEXT: (S) 2 ops-merged

test.func @f(%a: i32) -> i32 {
  %x = test.addi %a, %a : i32
  %y = test.addi %a, %a : i32
  %z = test.addi %a, %a : i32
  %m = test.muli %x, %y : i32
  %n = test.muli %m, %z : i32
  test.return %n : i32
}
