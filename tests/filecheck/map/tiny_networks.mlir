// The tiny example networks, scheduled (inference and the training step's backward
// blocks) and mapped on the edge machine: every block gets a placement and ports, and
// every mapping is proved legal.
// RUN: %crane-opt %crane-root/examples/tiny_resnet.crn -p 'segment{time-limit=0.01},map' --pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS
// RUN: %crane-opt %crane-root/examples/tiny_transformer.crn -p 'segment{time-limit=0.01},map' --pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS
// RUN: %crane-opt %crane-root/examples/tiny_resnet.crn -p 'segment{time-limit=0.01},map' | filecheck %s

// STATS-LABEL: {{^}}map
// STATS-DAG:   blocks-placed
// STATS-DAG:   {{ 0 violations}}

// A block line ending right after its tables (no placement, no ports) must not appear.
// CHECK:     segment.schedule
// CHECK-NOT: {{segment.block .*(energy_pj = [-+.e0-9]+|phase = "[a-z0-9]+"|fused = array<i64: [0-9, ]*>)[}] : \(\) -> \(\)}}
// CHECK:     placement = [array<i64: {{[0-9]+}}
// CHECK-NOT: {{segment.block .*(energy_pj = [-+.e0-9]+|phase = "[a-z0-9]+"|fused = array<i64: [0-9, ]*>)[}] : \(\) -> \(\)}}
// CHECK:     }) {func = @tiny_resnet
