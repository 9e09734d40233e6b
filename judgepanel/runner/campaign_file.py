"""Campaign files: `campaign create --from campaign.yaml` and `campaign show NAME --yaml`.

A campaign file is a YAML mapping whose keys mirror the `campaign create` options (see
`KEYS`); template paths are relative to the file. Every mistake is one line naming the file and
the line (from the YAML node marks): an unknown key, a value of the wrong type, a duplicate key.
Options given on the command line override the file's values (`merge`). The file's sha256 is
stored with the campaign (`spec["origin"]`), as provenance: the same campaign created from
flags or from a file is one campaign.

    name: c1
    dataset: summeval
    pairs: se200
    protocol: pairwise
    templates:
      pairwise: my_pairwise.j2
      reference: my_pairwise_ref.j2     # for the items of `reference_categories`
    reference_categories: [math, reasoning, coding]
    turn: 2                             # judge the 2nd assistant reply of each conversation
    judges:                             # a spec, NAME=SPEC, or {name: NAME, spec: SPEC}
      - "mini=openai:gpt-4o-mini?temperature=0"
      - name: qwen-local
        spec: "openai:qwen2.5-7b?base_url=http://127.0.0.1:8000/v1&key_env=LOCAL_KEY"
    max_cost: 5.0
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from judgepanel.errors import BadInput
from judgepanel.inputs import check_yaml_depth, read_file
from judgepanel.providers.spec import check_judge_name

# key -> what it holds ("str", "int", "number", "strings" (a list or a comma-separated string),
# "judges" (a non-empty list of strings), "templates" (a mapping protocol -> path))
KEYS: Mapping[str, str] = {
    "name": "str",
    "dataset": "str",
    "pairs": "str",
    "split": "str",
    "limit": "int",
    "protocol": "str",
    "rubric": "str",
    "conditions": "strings",
    "dimensions": "strings",
    "repeats": "int",
    "templates": "templates",
    "judges": "judges",
    "max_cost": "number",
    "turn": "int",
    "reference_categories": "strings",
}
ORDER = tuple(KEYS)


@dataclass(frozen=True)
class CampaignFile:
    """A parsed campaign file: `values` holds only the keys the file sets."""

    path: Path
    sha256: str
    values: dict[str, Any] = field(default_factory=dict)
    # key -> the line its value starts on, and for a list the line of each element
    lines: dict[str, int] = field(default_factory=dict)
    item_lines: dict[str, list[int]] = field(default_factory=dict)

    @property
    def base(self) -> Path:
        return self.path.resolve().parent

    def origin(self) -> dict[str, Any]:
        return {"file": str(self.path.resolve()), "sha256": self.sha256}


def _where(path: Path, node: Node) -> str:
    return f"{path}:{node.start_mark.line + 1}"


def _scalar(path: Path, key: str, node: Node, kind: str) -> Any:
    if not isinstance(node, ScalarNode):
        raise BadInput(f"{_where(path, node)}: {key}: expected {_KIND_WORDS[kind]}")
    value = yaml.safe_load(yaml.serialize(node))
    if kind == "str":
        if (
            value is None
            or isinstance(value, bool | dict | list)
            or (isinstance(value, str) and not value.strip())
        ):
            raise BadInput(f"{_where(path, node)}: {key}: expected text")
        return str(value).strip()
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadInput(f"{_where(path, node)}: {key}: expected a whole number, got {node.value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInput(f"{_where(path, node)}: {key}: expected a number, got {node.value!r}")
    return float(value)


_KIND_WORDS = {
    "str": "text",
    "int": "a whole number",
    "number": "a number",
    "strings": "a list of names",
    "judges": "a list of judge specs",
    "templates": "a mapping of protocol: template file",
}


def _strings(path: Path, key: str, node: Node) -> list[str]:
    if isinstance(node, ScalarNode):
        text = _scalar(path, key, node, "str")
        return [p.strip() for p in text.split(",") if p.strip()]
    if not isinstance(node, SequenceNode):
        raise BadInput(f"{_where(path, node)}: {key}: expected {_KIND_WORDS['strings']}")
    return [_scalar(path, key, n, "str") for n in node.value]


def _judge(path: Path, node: Node) -> str:
    """A judge entry: `"SPEC"`, `"NAME=SPEC"` or `{name: NAME, spec: SPEC}` (-> `"NAME=SPEC"`)."""
    if not isinstance(node, MappingNode):
        return str(_scalar(path, "judges", node, "str"))
    got: dict[str, str] = {}
    for k, v in node.value:
        key = _scalar(path, "judges", k, "str")
        if key not in ("name", "spec"):
            raise BadInput(f"{_where(path, k)}: judges: unknown key {key!r}; a judge is {{name: …, spec: …}}")
        if key in got:
            raise BadInput(f"{_where(path, k)}: judges: {key} is given twice")
        got[key] = _scalar(path, f"judges.{key}", v, "str")
    if "spec" not in got:
        raise BadInput(f"{_where(path, node)}: judges: a judge mapping needs spec: PROVIDER:MODEL[?…]")
    if "name" not in got:
        return got["spec"]
    try:
        name = check_judge_name(got["name"])
    except BadInput as exc:
        raise BadInput(f"{_where(path, node)}: {exc}") from None
    return f"{name}={got['spec']}"


def _value(path: Path, key: str, node: Node) -> Any:
    kind = KEYS[key]
    if kind in ("str", "int", "number"):
        return _scalar(path, key, node, kind)
    if kind == "strings":
        return _strings(path, key, node)
    if kind == "judges":
        if not isinstance(node, SequenceNode) or not node.value:
            raise BadInput(f"{_where(path, node)}: judges: expected a non-empty list of judge specs")
        return [_judge(path, n) for n in node.value]
    if not isinstance(node, MappingNode):
        raise BadInput(f"{_where(path, node)}: templates: expected {_KIND_WORDS['templates']}")
    out: dict[str, str] = {}
    for k, v in node.value:
        proto = _scalar(path, "templates", k, "str")
        if proto in out:
            raise BadInput(f"{_where(path, k)}: templates: {proto} is given twice")
        out[proto] = _scalar(path, f"templates.{proto}", v, "str")
    return out


def load_campaign_file(path: Path) -> CampaignFile:
    """Read and check a campaign file; raise `BadInput` with `FILE:LINE: …` on any mistake."""
    data = read_file(path, "campaign file")  # a regular file of at most 1 MB (`judgepanel.inputs`)
    try:
        text = data.decode("utf-8")
        check_yaml_depth(text, str(path))
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except UnicodeDecodeError:
        raise BadInput(f"campaign file {path}: not UTF-8 text") from None
    except RecursionError:
        raise BadInput(f"{path}: YAML nested too deep") from None
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else 1
        raise BadInput(f"{path}:{line}: not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise BadInput(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(root, MappingNode):
        raise BadInput(f"{path}:1: a campaign file is a mapping of option: value")
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    item_lines: dict[str, list[int]] = {}
    for key_node, value_node in root.value:
        if not isinstance(key_node, ScalarNode):
            raise BadInput(f"{_where(path, key_node)}: keys must be plain names")
        key = str(key_node.value)
        if key not in KEYS:
            raise BadInput(f"{_where(path, key_node)}: unknown key {key!r}; known: {', '.join(ORDER)}")
        if key in values:
            raise BadInput(f"{_where(path, key_node)}: {key} is given twice")
        values[key] = _value(path, key, value_node)
        lines[key] = value_node.start_mark.line + 1
        if isinstance(value_node, SequenceNode):
            item_lines[key] = [n.start_mark.line + 1 for n in value_node.value]
    return CampaignFile(path, hashlib.sha256(data).hexdigest(), values, lines, item_lines)


# How the checks shared with the command line start their messages -> the file key they are about.
_FLAG_OF_KEY = {
    "protocol": ("--protocol ",),
    "repeats": ("--repeats ",),
    "limit": ("--limit ",),
    "max_cost": ("max_cost ", "--max-cost "),
    "conditions": ("--condition ",),
    "dimensions": ("--dimension ",),
    "turn": ("--turn ",),
    "split": ("--split ",),
    "reference_categories": ("--reference-categories ", "--reference-category "),
    "judges": ("--judge ", "judge spec ", "judge ", "unknown parameter "),
    "rubric": ("--rubric ", "no rubric named ", "rubric "),
    "dataset": ("--dataset ", "no dataset named "),
    "pairs": ("--pairs ", "no pair set named "),
    "templates": ("--template ", "template "),
}


def locate(file: CampaignFile, flags: Mapping[str, Any], message: str) -> str | None:
    """`message` (a check's one line about a value) as `FILE:LINE: key: …` when the value came from
    the campaign file rather than a flag, so the user is sent to the line to fix, not to a flag they
    never typed; None when the message is about no file value."""
    for key, starts in _FLAG_OF_KEY.items():
        start = next((p for p in starts if message.startswith(p)), None)
        if start is None or key not in file.values or merge(None, {key: flags.get(key)}):
            continue
        line = file.lines[key]
        value = file.values[key]
        items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
        quoted = re.findall(r"'([^']+)'", message)
        for n, item in zip(file.item_lines.get(key, []), items, strict=False):
            # the list element the message quotes, or whose parameter it names
            if isinstance(item, str) and (item in quoted or any(f"{q}=" in item for q in quoted)):
                line = n
                break
        rest = message[len(start) :] if start.startswith("--") or start == "max_cost " else message
        return f"{file.path}:{line}: {key}: {rest}"
    return None


def merge(file: CampaignFile | None, flags: Mapping[str, Any]) -> dict[str, Any]:
    """The file's values overridden by the flags that were given (None / empty = not given)."""
    merged = dict(file.values) if file is not None else {}
    for key, value in flags.items():
        if value is None or (isinstance(value, list | tuple | dict) and not value):
            continue
        merged[key] = value
    return merged


def to_yaml(spec: Mapping[str, Any], name: str) -> str:
    """A campaign file that re-creates the campaign `name` from its stored spec. Templates are
    written as the path they were read from (a classic one by its name), with their sha256 as a
    comment, so a later edit of the file is visible."""
    out: dict[str, Any] = {"name": name}
    for key in ("dataset", "pairs", "split", "limit", "protocol", "rubric"):
        if spec.get(key) is not None:
            out[key] = spec[key]
    conditions = list(spec.get("conditions") or [])
    if conditions and conditions != ["none"]:
        out["conditions"] = conditions
    if spec.get("dimensions"):
        out["dimensions"] = list(spec["dimensions"])
    if int(spec.get("repeats", 1)) != 1:
        out["repeats"] = int(spec["repeats"])
    templates = spec.get("templates") or {}
    if templates:
        out["templates"] = {p: (d.get("path") or d["name"]) for p, d in templates.items()}
    judges = list(spec.get("judge_specs") or spec["judges"])
    names = spec.get("judge_names") or []
    out["judges"] = (
        [{"name": n, "spec": j} for n, j in zip(names, judges, strict=True)]
        if len(names) == len(judges)
        else judges
    )
    if spec.get("max_cost") is not None:
        out["max_cost"] = spec["max_cost"]
    if spec.get("turn") is not None:
        out["turn"] = int(spec["turn"])
    if spec.get("reference_categories"):
        out["reference_categories"] = list(spec["reference_categories"])
    text = yaml.safe_dump(out, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    notes = [f"# template {p}: sha256 {d['sha256']}" for p, d in templates.items()]
    return "\n".join([*notes, text.rstrip()]) + "\n"
