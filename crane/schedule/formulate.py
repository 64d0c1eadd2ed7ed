"""The block MILP: ScT (Eqs. 1-6), the memory choice (MeT, Eqs. 7-12) and the cost, linear.

Variables: sub-batches per (state, tile split) ``y``, a binary per used split (to charge the
resident weight load once), a binary per producer saying whether its stored outputs stay in
SRAM (fused) or go to DRAM, and per (edge, shared state) the number of sub-batches handed
over directly plus a binary making ``direct = max(0, ScT[i][dst] - ScT[i-1][src])`` exact.
Every max() of ``evaluate`` becomes "variable >= each term" with a positive cost, or a
big-M pair on a binary, so the optimum of the MILP is the optimum of ``evaluate``.

Latency and energy are two linear expressions; ``crane.schedule.pareto`` turns them into an
exact L^p E^q optimum by sweeping latency levels.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.cost.traffic import dram_cycles, link_cycles, noc_cycles, traffic_energy
from crane.dialects.segment_tables import active_columns, active_states, is_active, num_states
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.evaluate import Plan, activation_capacity, held_capacity
from crane.schedule.layout import held_path, holding_tiles
from crane.schedule.options import (
    StateOption,
    edge_hops,
    edge_share,
    input_reads,
    port_hops,
    sram_hops,
    sram_share,
    state_options,
)
from crane.solve.milp import Expr, Model, Solution


@dataclass(frozen=True, slots=True)
class Prices:
    """Energy (pJ), DRAM bytes, NoC byte-hops and busiest-link bytes per byte of each kind
    of transfer."""

    energy: float
    dram: float
    hops: float
    link: float = 0.0


def _on_chip(machine: Machine, hops: float, share: float) -> Prices:
    return Prices(hops * machine.noc_hop_pj_per_byte + machine.sram_read_pj_per_byte
                  + machine.sram_write_pj_per_byte, 0.0, hops, share)


def _dram_read(machine: Machine, hops: float) -> Prices:
    return Prices(machine.dram_pj_per_byte + hops * machine.noc_hop_pj_per_byte
                  + machine.sram_write_pj_per_byte, 1.0, hops)


def _dram_write(machine: Machine, hops: float) -> Prices:
    return Prices(machine.dram_pj_per_byte + hops * machine.noc_hop_pj_per_byte
                  + machine.sram_read_pj_per_byte, 1.0, hops)


def _sram_write(machine: Machine) -> Prices:
    return Prices(machine.sram_write_pj_per_byte, 0.0, 0.0)


class _State:
    """Linear pieces of one state: energy, DRAM bytes, NoC byte-hops, compute cycles."""

    def __init__(self) -> None:
        self.energy: list[tuple[int, float]] = []
        self.dram: list[tuple[int, float]] = []
        self.hops: list[tuple[int, float]] = []
        self.link: list[tuple[int, float]] = []
        self.compute: list[tuple[int, float]] = []
        self.lead: list[tuple[int, float]] = []
        """(binary "option used", its lead): the state's lead is the largest used one."""
        self.tail: list[tuple[int, float]] = []
        self.const = [0.0, 0.0, 0.0]

    def charge(self, var_terms: list[tuple[int, float]], nbytes: float, price: Prices) -> None:
        """Add ``nbytes * (sum of var terms)`` of a transfer kind."""
        for var, coef in var_terms:
            self.energy.append((var, coef * nbytes * price.energy))
            self.dram.append((var, coef * nbytes * price.dram))
            self.hops.append((var, coef * nbytes * price.hops))
            self.link.append((var, coef * nbytes * price.link))


@dataclass
class Formulation:
    """A built MILP with handles on its latency and energy and a way back to a ``Plan``."""

    model: Model
    latency: Expr
    energy: Expr
    block: Block
    subbatch: int
    q: int
    y: list[list[int]]
    fused: list[int | None]

    def start_of(self, plan: Plan) -> dict[int, float]:
        """Values of the decision variables that reproduce ``plan`` (a MIP start)."""
        start = {v: float(c) for row, counts in zip(self.y, plan.mix, strict=True)
                 for v, c in zip(row, counts, strict=True)}
        start.update({f: float(flag) for f, flag in zip(self.fused, plan.fused, strict=True)
                      if f is not None})
        return start

    def plan(self, sol: Solution) -> Plan:
        mix = tuple(tuple(round(sol[v]) for v in row) for row in self.y)
        fused = tuple(bool(round(sol[f])) if f is not None else False for f in self.fused)
        return Plan(self.block, self.subbatch, self.q, mix, fused)


def formulate(block: Block, subbatch: int, q: int, machine: Machine,
              options: tuple[tuple[StateOption, ...], ...] | None = None,
              sram_reserved: float = 0.0, allow_fusion: bool = True,
              traffic: bool = True) -> Formulation | None:
    """The MILP of one block at one sub-batch size; None when a state has no split.

    With ``traffic=False`` only the compute terms (Eqs. 18 and 20) are kept: the paper's
    first-stage ScT problem, which ``crane.schedule.canonical`` solves in closed form.
    """
    n = block.n
    opts = options or tuple(state_options(block, i, subbatch, machine)
                            for i in range(num_states(n)))
    if any(not o for o in opts):
        return None
    model = Model(block.name)
    big = float(q)
    y = [[model.var(f"y{i}_{o}", 0, q, integer=True) for o in range(len(opts[i]))]
         for i in range(num_states(n))]
    s = [Expr.of((v, 1.0) for v in row) for row in y]
    sct = _sct_exprs(s, n)
    for j in range(n):
        model.constrain(sct[j + n - 1][j], q, q, f"complete{j}")
    for m, j in block.deps:
        for i in range(j, j + n - 1):
            model.constrain(sct[i][m] + sct[i][j].scaled(-1), lb=1, name=f"dep{m}_{j}@{i}")
    fused = [model.binary(f"f{m}") if block.consumers(m) and allow_fusion else None
             for m in range(n)]
    states = [_State() for _ in range(num_states(n))]
    direct = _direct_vars(model, block, sct, big)
    for i in range(num_states(n)):
        if not traffic:
            states[i].compute += [(v, o.cycles) for v, o in zip(y[i], opts[i], strict=True)]
            states[i].energy += [(v, o.energy_pj) for v, o in zip(y[i], opts[i], strict=True)]
            continue
        _state_costs(model, block, subbatch, machine, opts[i], y[i], s[i], i, direct,
                     fused, big, states[i])
    _capacity(model, block, subbatch, sct, fused, big, activation_capacity(machine, sram_reserved),
              machine)
    latency, energy = _objectives(model, machine, states)
    return Formulation(model, latency, energy, block, subbatch, q, y, fused)


def _sct_exprs(s: list[Expr], n: int) -> list[list[Expr]]:
    rows: list[list[Expr]] = []
    for i in range(num_states(n)):
        prev = rows[-1] if rows else [Expr() for _ in range(n)]
        rows.append([prev[j] + s[i] if is_active(n, i, j) else prev[j] for j in range(n)])
    return rows


def _direct_vars(model: Model, block: Block, sct: list[list[Expr]],
                 big: float) -> dict[tuple[int, int, int], int]:
    """direct[(state, src, dst)] = max(0, ScT[i][dst] - ScT[i-1][src]) exactly."""
    n = block.n
    direct: dict[tuple[int, int, int], int] = {}
    for m, j in block.deps:
        for i in active_states(n, j):
            if not is_active(n, i, m):
                continue
            x = sct[i][j] + (sct[i - 1][m].scaled(-1) if i else Expr())
            d, z = model.var(f"d{m}_{j}@{i}", 0, big), model.binary(f"z{m}_{j}@{i}")
            model.constrain(Expr({d: 1.0}) + x.scaled(-1), lb=0)
            model.constrain(Expr({d: 1.0, z: big}) + x.scaled(-1), ub=big)
            model.constrain(Expr({d: 1.0, z: -big}), ub=0)
            direct[(i, m, j)] = d
    return direct


def _state_costs(model: Model, block: Block, b: int, machine: Machine,
                 opts: tuple[StateOption, ...], y: list[int], s: Expr, i: int,
                 direct: dict[tuple[int, int, int], int], fused: list[int | None],
                 big: float, st: _State) -> None:
    for opt, var in zip(opts, y, strict=True):
        st.compute.append((var, opt.cycles))
        # opt.energy_pj already prices the re-streamed weights of opt.traffic.
        st.energy.append((var, opt.energy_pj))
        st.dram.append((var, opt.traffic.dram_bytes))
        st.hops.append((var, opt.traffic.noc_byte_hops))
        st.link.append((var, opt.traffic.noc_link_bytes))
        if not (opt.weight_load.dram_bytes or opt.lead or opt.tail):
            continue
        used = model.binary(f"u{i}_{var}")
        model.constrain(Expr({var: 1.0, used: -big}), ub=0)
        st.lead.append((used, opt.lead))
        st.tail.append((used, opt.tail))
        if opt.weight_load.dram_bytes:
            st.energy.append((used, traffic_energy(opt.weight_load, machine)))
            st.dram.append((used, opt.weight_load.dram_bytes))
            st.hops.append((used, opt.weight_load.noc_byte_hops))
            st.link.append((used, opt.weight_load.noc_link_bytes))
    opt0, s_terms = opts[0], list(s.terms.items())
    for e in block.edges:
        if not is_active(block.n, i, e.dst):
            continue
        d = direct.get((i, e.src, e.dst))
        nbytes = e.bytes * input_reads(opt0, e.dst) * b
        if d is not None:
            st.charge([(d, 1.0)], nbytes, _on_chip(machine, edge_hops(machine, opt0, e.src, e.dst),
                                                   edge_share(machine, opt0, e.src, e.dst)))
        stored = s_terms + ([(d, -1.0)] if d is not None else [])
        _split_store(model, st, stored, nbytes, fused[e.src], big,
                     _on_chip(machine, *held_path(block, b, machine, i, e.src,
                                                  opt0.region(e.dst))),
                     _dram_read(machine, port_hops(machine, opt0, e.dst)))
    for m in active_columns(block.n, i):
        _producer(model, block, b, machine, opt0, s_terms, i, m, direct, fused, big, st)


def _split_store(model: Model, st: _State, amount: list[tuple[int, float]], nbytes: float,
                 fused: int | None, big: float, in_sram: Prices, in_dram: Prices) -> None:
    """Route ``amount`` sub-batches through SRAM if ``fused`` else DRAM, exactly."""
    if fused is None:
        st.charge(amount, nbytes, in_dram)
        return
    for price, sign in ((in_sram, 1.0), (in_dram, -1.0)):
        v = model.var("route", 0)
        # v >= amount - big * (1 - f)  (SRAM)   or   v >= amount - big * f  (DRAM)
        offset = big if sign > 0 else 0.0
        model.constrain(Expr.of([(v, 1.0), (fused, -big * sign)] + [(a, -c) for a, c in amount]),
                        lb=-offset)
        st.charge([(v, 1.0)], nbytes, price)


def _producer(model: Model, block: Block, b: int, machine: Machine, opt0: StateOption,
              s_terms: list[tuple[int, float]], i: int, m: int,
              direct: dict[tuple[int, int, int], int], fused: list[int | None], big: float,
              st: _State) -> None:
    reads = input_reads(opt0, m) * b
    sram_in, dram_in = block.external_sram_in(m) * reads, block.external_dram_in(m) * reads
    if sram_in:
        st.charge(s_terms, sram_in, _on_chip(machine, sram_hops(machine, opt0, m),
                                             sram_share(machine, opt0, m)))
    if dram_in:
        st.charge(s_terms, dram_in, _dram_read(machine, port_hops(machine, opt0, m)))
    ext_out = block.external_out[m] * b
    if ext_out:
        st.charge(s_terms, ext_out, _sram_write(machine) if block.out_to_sram
                  else _dram_write(machine, port_hops(machine, opt0, m)))
    also = block.dram_out[m] * b if block.dram_out else 0
    if also:
        st.charge(s_terms, also, _dram_write(machine, port_hops(machine, opt0, m)))
    consumers = block.consumers(m)
    if not consumers:
        return
    kept = model.var(f"kept{m}@{i}", 0)
    for e in consumers:
        d = direct.get((i, m, e.dst))
        model.constrain(Expr.of([(kept, 1.0)] + [(a, -c) for a, c in s_terms]
                                + ([(d, 1.0)] if d is not None else [])), lb=0)
    _split_store(model, st, [(kept, 1.0)], block.layers[m].output_bytes * b, fused[m], big,
                 _sram_write(machine), _dram_write(machine, port_hops(machine, opt0, m)))


def _capacity(model: Model, block: Block, b: int, sct: list[list[Expr]],
              fused: list[int | None], big: float, capacity: float, machine: Machine) -> None:
    """SRAM held at each state boundary fits (Eq. 11 with the FIFO ranges of ``evaluate``):
    on the whole chip, and per tile for each column's kept outputs on its own tiles."""
    per_tile = held_capacity(machine)
    for i in range(num_states(block.n)):
        terms: list[tuple[int, float]] = []
        for m in range(block.n):
            column: list[tuple[int, float]] = []
            if block.out_to_sram and block.external_out[m]:
                column += [(v, c * block.external_out[m] * b) for v, c in sct[i][m].terms.items()]
            column += _occupancy(model, block, b, sct, fused[m], big, i, m)
            if column:
                tiles = holding_tiles(block, b, machine, i, m)
                model.constrain(Expr.of(column), ub=per_tile * tiles, name=f"sram{m}@{i}")
            terms += column
        if terms:
            model.constrain(Expr.of(terms), ub=capacity, name=f"sram@{i}")


def _occupancy(model: Model, block: Block, b: int, sct: list[list[Expr]], f: int | None,
               big: float, i: int, m: int) -> list[tuple[int, float]]:
    """Bytes of producer m's unconsumed outputs held in SRAM after state i (if fused)."""
    if f is None:
        return []
    occ = model.var(f"occ{m}@{i}", 0)
    for e in block.consumers(m):
        gap = sct[i][m] + sct[i][e.dst].scaled(-1)
        model.constrain(Expr.of([(occ, 1.0), (f, -big)]) + gap.scaled(-1), lb=-big)
    return [(occ, float(block.layers[m].output_bytes * b))]


def _objectives(model: Model, machine: Machine, states: list[_State]) -> tuple[Expr, Expr]:
    """Per-state latency = max(compute + lead, NoC + tail, DRAM + tail) via epigraph
    variables (lead and tail: the largest of the used options'); energy sums."""
    latency_terms: list[tuple[int, float]] = []
    energy_terms: list[tuple[int, float]] = []
    dram_per_byte = dram_cycles(1.0, machine)
    noc_per_hop = noc_cycles(1.0, machine.tiles, machine)
    link_per_byte = link_cycles(1.0, machine)
    for i, st in enumerate(states):
        lat = model.var(f"L{i}", 0)
        latency_terms.append((lat, 1.0))
        lead, tail = _largest(model, st.lead, f"lead{i}"), _largest(model, st.tail, f"tail{i}")
        for terms, scale, extra in ((st.compute, 1.0, lead), (st.dram, dram_per_byte, tail),
                                    (st.hops, noc_per_hop, tail), (st.link, link_per_byte, tail)):
            model.constrain(Expr.of([(lat, 1.0)] + [(v, -c * scale) for v, c in terms]
                                    + ([(extra, -1.0)] if extra is not None else [])), lb=0)
        energy_terms += st.energy
    return Expr.of(latency_terms), Expr.of(energy_terms)


def _largest(model: Model, terms: list[tuple[int, float]], name: str) -> int | None:
    """A variable at least every ``coef * binary`` of ``terms`` (None when there are none)."""
    if not any(c for _, c in terms):
        return None
    top = model.var(name, 0)
    for used, coef in terms:
        if coef:
            model.constrain(Expr({top: 1.0, used: -coef}), lb=0)
    return top
