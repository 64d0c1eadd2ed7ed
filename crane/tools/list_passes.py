"""``crane-opt --list-passes``: every pass with its options, and the named pipelines."""

from __future__ import annotations

from crane.passes.options import option_infos
from crane.passes.registry import PassRegistry


def format_pass_list(registry: PassRegistry) -> str:
    lines = ["Passes:"]
    for pass_class in registry.passes():
        anchor = pass_class.anchor or "any op"
        lines.append(f"  {pass_class.name:<24} {pass_class.summary} (on {anchor})")
        for info in option_infos(pass_class):
            default = "required" if info.default_text is None else f"default {info.default_text}"
            lines.append(f"      {info.cli_name}: {info.type_text} ({default})")
            if info.doc:
                lines.append(f"          {info.doc}")
    lines.append("Named pipelines:")
    for pipeline in registry.pipelines():
        lines.append(f"  {pipeline.name:<24} {pipeline.summary}")
        lines.append(f"      = {pipeline.text}")
    return "\n".join(lines)
