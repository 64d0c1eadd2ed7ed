"""The verifier: structural rules of the IR plus every op's own checks.

Structural rules: operands are defined and dominate their uses (defined earlier in the
same block or in an enclosing block before the enclosing op), values do not cross an
``IsolatedFromAbove`` boundary, terminators end their blocks, symbols are unique in a
symbol table. Then each registered op's spec, traits and ``verify_op`` run. All errors are
collected (one per op at most), each at the op's location.
"""

from __future__ import annotations

from crane.ir.core import Block, Operation, Value, VerifyError
from crane.ir.diagnostics import Diagnostic, Severity
from crane.ir.traits import IsolatedFromAbove, IsTerminator, NoTerminator, SymbolTable, symbol_name

_MEMOS: list[dict[str, dict[object, object]]] = []
"""One memo per :func:`verify` run in progress (see :func:`verification_memo`)."""


def verify(root: Operation, *, allow_unregistered: bool = True) -> list[Diagnostic]:
    """Verify ``root`` and everything nested in it; returns the errors found (empty if valid)."""
    errors: list[Diagnostic] = []
    _MEMOS.append({})
    try:
        _verify_op(root, set(), errors, allow_unregistered)
    finally:
        _MEMOS.pop()
    return errors


def verification_memo(topic: str) -> dict[object, object] | None:
    """A dict shared by the op verifiers of the :func:`verify` run in progress, one per
    ``topic`` (None outside a run).

    Verifying changes no IR, so what many ops ask of their surroundings alike (the mesh
    of the machine a module targets, for each of a million tile instructions) can be found
    once per run and kept here."""
    return _MEMOS[-1].setdefault(topic, {}) if _MEMOS else None


def _error(op: Operation, message: str) -> Diagnostic:
    return Diagnostic(Severity.ERROR, f"'{op.name}' op {message}", op.location)


def _verify_op(op: Operation, visible: set[Value], errors: list[Diagnostic],
               allow_unregistered: bool) -> None:
    for i, value in enumerate(op._operands):
        if value not in visible:
            errors.append(_error(op, _bad_operand_message(op, i, value)))
            break
    else:
        _verify_own_rules(op, errors, allow_unregistered)
    if not op.regions:
        return
    isolated = op.has_trait(IsolatedFromAbove)
    scope = set() if isolated else visible
    needs_terminator = op.spec is not None and not op.has_trait(NoTerminator)
    for region in op.regions:
        for block in region.blocks:
            _verify_block(block, scope, errors, allow_unregistered, needs_terminator)
    if op.has_trait(SymbolTable):
        _verify_symbols(op, errors)


def _verify_block(block: Block, outer: set[Value], errors: list[Diagnostic],
                  allow_unregistered: bool, needs_terminator: bool) -> None:
    # Values defined in the block are added while walking it and removed afterwards, so
    # one set serves the whole walk and a use before its definition is caught.
    added: list[Value] = list(block.args)
    outer.update(block.args)
    for op in block.ops:
        _verify_op(op, outer, errors, allow_unregistered)
        outer.update(op.results)
        added.extend(op.results)
    last = block.last_op
    owner = block.parent_op
    if needs_terminator and last is None and owner is not None:
        errors.append(_error(owner, "has an empty block: its region needs a terminator"))
    elif needs_terminator and last is not None and last.spec is not None \
            and not last.has_trait(IsTerminator):
        errors.append(_error(last, "must be followed by a terminator: the block does not end "
                                   "with one"))
    outer.difference_update(added)


def _bad_operand_message(op: Operation, index: int, value: Value) -> str:
    defining = value.owner_op
    if defining is None:
        return f"operand #{index} is not defined anywhere (a dangling value)"
    if value.parent_block is op.parent and defining is not op.parent_op:
        return f"operand #{index} does not dominate this use: it is defined later, by '{defining.name}'"
    return f"operand #{index} is not visible here: it is defined by '{defining.name}' " \
           "in another region or above an isolated op"


def _verify_own_rules(op: Operation, errors: list[Diagnostic], allow_unregistered: bool) -> None:
    spec = type(op).spec
    if spec is None:
        if not allow_unregistered:
            errors.append(_error(op, "is not registered"))
        return
    try:
        spec.verify(op)
        for trait in type(op).traits:
            trait.verify(op)
        op.verify_op()
    except VerifyError as exc:
        errors.append(_error(op, str(exc)))


def _verify_symbols(op: Operation, errors: list[Diagnostic]) -> None:
    seen: dict[str, Operation] = {}
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                name = symbol_name(child)
                if name is None:
                    continue
                first = seen.setdefault(name, child)
                if first is not child:
                    diag = _error(child, f"redefines symbol '@{name}'")
                    errors.append(diag.attach_note("the first definition is here", first.location))
