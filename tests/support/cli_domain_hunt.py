"""Every `t3rl` option and argument declares its domain, and values outside it come from the declaration.

A number declares both bounds (Typer's `min=`/`max=`, with a comment saying what they mean; an option that
sets a config field takes them from the field, launch/cli/option_fields.py), a closed set of words declares
them (a `Literal` or an `Enum`); `--help` shows both, and Typer refuses a value outside
while parsing, before the command runs. Free text is allowed only where FREE_TEXT says why (names a
config or a plugin defines, globs, keys, URLs); paths, flags and Hydra overrides have domains of their
own (tests/support/cli_hunt.py hunts them).

`outside(parameter)` derives the values a declaration excludes: below its least, above its most, a
fraction for an integer, nan and ±inf, not a number, the empty string, an in-bounds value in fullwidth
digits; a near-miss, a wrong case, a
stray space and the empty string for a set of words; the empty string and a blank for free text (what
`launch.cli.help_format._refuse_empty_word` refuses). A new option is hunted with no edit here.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.cli_hunt import Parameter

# Parameters whose domain is open text, by (command, name): why no closed set or bound fits, and where
# a word outside the domain the command knows later is refused (each refusal names the option).
FREE_TEXT: dict[tuple[tuple[str, ...], str], str] = {
    # A built-in engine or a plugin's import path (`my_pkg.module:MyClass`): _check_engine_plugin imports
    # it before anything is composed.
    (("eval",), "--engine"): "built-ins or any plugin's import path",
    (("eval",), "--url"): "any server's URL; checked (and its password masked) before the first episode",
    # The env's splits and the experiment's stages are known once the config is composed.
    (("eval",), "--split"): "the composed env's splits",
    (("eval",), "--stage"): "the composed experiment's eval stages",
    (("run",), "--from"): "the composed experiment's stages",
    (("run",), "--only"): "the composed experiment's stages",
    (("plan",), "--from"): "the composed experiment's stages",
    (("plan",), "--only"): "the composed experiment's stages",
    # Config groups and their options are files under conf/ and every --config-dir.
    (("ls",), "GROUP"): "conf/'s groups and those of --config-dir",
    (("ls",), "OPTION"): "GROUP's options in conf/ and --config-dir",
    (("check-template",), "MODEL"): "conf/model's options and those of --config-dir",
    (("show",), "--explain"): "any key of the composed config",
    # A shell glob, and conditions / metric keys over whatever configs and summaries the runs hold.
    (("runs",), "--name"): "a glob over run paths",
    (("runs",), "--where"): "KEY=VALUE over the runs' configs",
    (("runs",), "--metric"): "a key of the runs' eval summaries",
    (("runs", "diff"), "--metric"): "a key of the runs' eval summaries",
}


@dataclass(frozen=True)
class Outside:
    """A value the parameter's declaration excludes: its id and its text."""

    id: str
    text: str


def undeclared(parameters: list[Parameter]) -> list[str]:
    """The parameters whose domain is not declared: a number without both bounds, free text that
    FREE_TEXT does not list."""
    found = []
    for p in parameters:
        where = f"t3rl {' '.join(p.command)} {p.name}"
        if p.kind in ("int", "float") and (p.low is None or p.high is None):
            found.append(f"{where}: a number without min= and max= (what bounds it, in a comment)")
        elif p.kind == "text" and (p.command, p.name) not in FREE_TEXT:
            found.append(f"{where}: free text; declare its words (Literal/Enum), or say why in FREE_TEXT")
    return found


_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def _number(value: float, integer: bool) -> str:
    return str(int(value)) if integer else repr(float(value))


def outside(parameter: Parameter) -> list[Outside]:
    """The values outside the parameter's declared domain, derived from its declaration."""
    if parameter.kind in ("int", "float"):
        integer = parameter.kind == "int"
        step = 1 if integer else abs(parameter.high or 1.0) * 1e-3 or 1e-3
        values = [Outside("empty", ""), Outside("not-a-number", "one"), Outside("nan", "nan")]
        values += [Outside("inf", "inf"), Outside("-inf", "-inf")]
        if parameter.low is not None:
            values.append(Outside("below-min", _number(parameter.low - step, integer)))
        if parameter.high is not None:
            values.append(Outside("above-max", _number(parameter.high + step, integer)))
            far = _number(parameter.high, integer) + "0" * 30 if integer else "1e308"
            values.append(Outside("far-above-max", far))
        low = parameter.low if parameter.low is not None else 0
        if integer:
            values.append(Outside("fraction", f"{low}.5"))
        # An in-bounds value in fullwidth digits: Python's int() reads them, Typer does not.
        values.append(Outside("fullwidth-digits", _number(low, integer).translate(_FULLWIDTH)))
        return values
    if parameter.kind == "choice":
        first = parameter.choices[0]
        values = [Outside("empty", ""), Outside("stray-space", f"{first} ")]
        values.append(Outside("near-miss", f"{first}x"))
        if first.upper() not in parameter.choices and first.upper() != first:
            values.append(Outside("wrong-case", first.upper()))
        return values
    if parameter.kind == "text":  # free text: no word means anything empty or blank
        return [Outside("empty", ""), Outside("blank", "  ")]
    return []
