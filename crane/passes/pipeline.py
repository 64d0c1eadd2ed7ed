"""Turn pipeline text into a tree of configured passes, checked against the registry.

Every mistake is a :class:`PipelineSyntaxError` pointing into the user's text: unknown
pass or anchor (with "did you mean"), bad or duplicate options, anchors that cannot own
a pipeline. Named pipelines are expanded in place.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.ir.context import Context
from crane.ir.traits import IsolatedFromAbove
from crane.passes.options import bind_options, closest_match, format_option_value
from crane.passes.pass_base import Pass
from crane.passes.pipeline_text import (
    PassEntry,
    PipelineNode,
    PipelineSyntaxError,
    Span,
    parse_pipeline,
    quote_option_value,
)
from crane.passes.registry import PassRegistry

ROOT_ANCHOR = "builtin.module"
ANY = "any"


@dataclass(frozen=True)
class PassStep:
    """One configured pass and the pipeline text it came from."""

    pass_: Pass
    given: tuple[str, ...]
    """Names of the options the user gave, for a faithful ``--dump-pass-pipeline``."""

    @property
    def name(self) -> str:
        return self.pass_.name


@dataclass(frozen=True)
class OpPipeline:
    """Steps run on every op named ``anchor`` (``any``: every isolated op) at one level."""

    anchor: str
    steps: tuple[PassStep | OpPipeline, ...]


def build_pipeline(text: str, registry: PassRegistry, context: Context) -> OpPipeline:
    """Parse and resolve ``text``; a flat list is anchored on the module."""
    node = parse_pipeline(text)
    if node.anchor is None:
        return OpPipeline(ROOT_ANCHOR, _build_steps(node, registry, context, depth=0))
    return _build_node(node, registry, context, depth=0)


def _build_node(node: PipelineNode, registry: PassRegistry, context: Context,
                depth: int) -> OpPipeline:
    anchor = node.anchor or ROOT_ANCHOR
    _check_anchor(anchor, node.anchor_span or node.span, context)
    return OpPipeline(anchor, _build_steps(node, registry, context, depth))


def _check_anchor(anchor: str, span: Span, context: Context) -> None:
    if anchor == ANY:
        return
    op_class = context.lookup_op(anchor)
    if op_class is None:
        suggestion = context.suggest_op(anchor)
        hint = f"; did you mean '{suggestion}'?" if suggestion else ""
        raise PipelineSyntaxError(f"unknown operation '{anchor}' as pipeline anchor{hint}", span)
    if not op_class.has_trait(IsolatedFromAbove):
        raise PipelineSyntaxError(
            f"'{anchor}' cannot anchor a pipeline: it is not isolated from above", span)


def _build_steps(node: PipelineNode, registry: PassRegistry, context: Context,
                 depth: int) -> tuple[PassStep | OpPipeline, ...]:
    steps: list[PassStep | OpPipeline] = []
    for element in node.elements:
        if isinstance(element, PipelineNode):
            steps.append(_build_node(element, registry, context, depth))
        else:
            steps.extend(_build_entry(element, registry, context, depth))
    return tuple(steps)


def _build_entry(entry: PassEntry, registry: PassRegistry, context: Context,
                 depth: int) -> list[PassStep | OpPipeline]:
    alias = registry.pipeline(entry.name)
    if alias is not None:
        return _expand_alias(entry, alias.text, registry, context, depth)
    pass_class = registry.lookup(entry.name)
    if pass_class is None:
        raise _unknown_pass(entry, registry)
    kwargs = bind_options(pass_class, entry)
    return [PassStep(pass_class(**kwargs), tuple(kwargs))]


def _expand_alias(entry: PassEntry, text: str, registry: PassRegistry, context: Context,
                  depth: int) -> list[PassStep | OpPipeline]:
    if entry.options:
        raise PipelineSyntaxError(f"named pipeline '{entry.name}' takes no options",
                                  entry.options[0].key_span)
    if depth > 16:
        raise PipelineSyntaxError(f"named pipeline '{entry.name}' expands into itself",
                                  entry.name_span)
    try:
        node = parse_pipeline(text)
        if node.anchor is not None:
            return [_build_node(node, registry, context, depth + 1)]
        return list(_build_steps(node, registry, context, depth + 1))
    except PipelineSyntaxError as exc:
        raise PipelineSyntaxError(
            f"in named pipeline '{entry.name}' = \"{text}\": {exc.message}", entry.name_span,
        ) from exc


def _unknown_pass(entry: PassEntry, registry: PassRegistry) -> PipelineSyntaxError:
    suggestion = closest_match(entry.name, registry.names())
    hint = f"; did you mean '{suggestion}'?" if suggestion else \
        " (run 'crane-opt --list-passes' to see them all)"
    return PipelineSyntaxError(f"unknown pass or pipeline '{entry.name}'{hint}", entry.name_span)


def format_built(pipeline: OpPipeline) -> str:
    """The canonical text of a resolved pipeline (aliases expanded)."""
    inner = ",".join(_format_step(step) for step in pipeline.steps)
    return f"{pipeline.anchor}({inner})"


def _format_step(step: PassStep | OpPipeline) -> str:
    if isinstance(step, OpPipeline):
        return format_built(step)
    options = [
        f"{name.replace('_', '-')}={quote_option_value(format_option_value(getattr(step.pass_, name)))}"
        for name in step.given
    ]
    return step.name + ("{" + " ".join(options) + "}" if options else "")
