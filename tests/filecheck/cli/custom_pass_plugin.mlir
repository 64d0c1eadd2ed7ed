// The out-of-tree example: examples/custom_pass/plugin.py adds the demo dialect and the
// demo-expand-scale pass through --load-pass-plugin.
// RUN: %crane-opt --load-pass-plugin %crane-root/examples/custom_pass/plugin.py %s -p 'demo-expand-scale{max-factor=3}' | filecheck %s
// RUN: %crane-opt --load-pass-plugin %crane-root/examples/custom_pass/plugin.py %s | %crane-opt --load-pass-plugin %crane-root/examples/custom_pass/plugin.py - | filecheck %s --check-prefix=KEEP
// RUN: %crane-opt --load-pass-plugin %crane-root/examples/custom_pass/plugin.py %s -p 'demo-expand-scale{max-factor=1}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: not %crane-opt %s 2>&1 | filecheck %s --check-prefix=NOPLUGIN
// RUN: not %crane-opt --load-pass-plugin %crane-root/examples/custom_pass/plugin.py %s -p 'demo-expand-scale{max-factr=3}' 2>&1 | filecheck %s --check-prefix=OPTION

// CHECK-LABEL: test.func @f(
// CHECK-SAME:      %[[X:.*]]: i32
// CHECK-NEXT:    %[[S1:.*]] = test.addi %[[X]], %[[X]] : i32
// CHECK-NEXT:    %[[S2:.*]] = test.addi %[[S1]], %[[X]] : i32
// CHECK-NEXT:    %{{.*}} = demo.scale %[[S2]] {factor = 10} : i32
// CHECK-NOT:     demo.scale

// KEEP:      demo.scale %x {factor = 3} : i32
// KEEP-NEXT: demo.scale %a {factor = 10} : i32

// STATS:      demo-expand-scale
// STATS-NEXT: (S) 1 scales-expanded

// NOPLUGIN: error: unregistered operation 'demo.scale'

// OPTION: error: unknown option 'max-factr'{{.*}}did you mean 'max-factor'

test.func @f(%x: i32) -> i32 {
  %a = demo.scale %x {factor = 3} : i32
  %b = demo.scale %a {factor = 10} : i32
  %c = demo.scale %b {factor = 1} : i32
  test.return %c : i32
}
