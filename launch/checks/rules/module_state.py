"""What a world's methods change of the state its module holds, read from their bytecode by what each
value on the stack IS, not by how the code spells it.

Episodes run concurrently in one process, each on its own Env, so an object the module holds (a list, a
dict, a module, a class, a function, an instance at its top level) is one for all of them: a method
changing it makes an episode read another's. Wave five read `SEEN.append(…)` and `SEEN[k] = …` spelt on
the global's own name only; an alias (`import mod as m; m.x = …`, `seen = SEEN; seen.append(…)`, an
attribute of self set to it in __init__), a class attribute (`type(self).n += 1`, `Leaky.n = …`), an
item of a module's dict (`TOOLS[k][j] = …`) or a mutable default (`def step(self, action, seen=[])`)
changed it unsaid.

Here each method's instructions are played over a stack of taints: a slot holds what the module holds
that the value is (or lies inside), with the object where it is known. A load of a global the module
holds, of a parameter whose default is mutable, of a local or an attribute of self bound to either,
pushes its taint; an attribute or item of a tainted value is tainted. A call's result is tainted where
the call reads what it is called on (declared: `ITEM_READERS`, `TOOLS.get(k)`, `SEEN.pop()`; the builtins
of `_BUILTINS`, `getattr(m, name)`, `vars(m)`, `globals()`, `next(it)`), as is a module a method imports
(`import sys` then `sys.modules[__name__].x = …`) and what a loop or an unpacking takes out of a tainted
value; any other call's result is not (a module's function makes a new object: `m.deque()`). A change is
an attribute or item stored into (or deleted from) a tainted value, a mutating method called on it, an
in-place operator on a tainted list, dict, set or bytearray, or a global rebound. Code run by `exec` or
`eval` cannot be read: a call of either is a change of what it cannot name (`UNREAD`). A call of a
function of the world's module (a helper, a method on self) is followed, `FOLLOWED_DEPTH` deep, with the
caller's values bound to its parameters: what it changes is the caller's change (`_push(SEEN, a)`).
"""

from __future__ import annotations

import dis
import inspect
import sys
import types
from collections.abc import Iterable, Iterator, MutableMapping, MutableSequence, MutableSet
from dataclasses import dataclass
from typing import Any

# Methods that change the object they are called on (a container's, a deque's, a list's ordering).
MUTATORS = frozenset(
    ("append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault", "add",
     "discard", "sort", "reverse", "appendleft", "extendleft", "popleft", "rotate", "difference_update",
     "intersection_update", "symmetric_difference_update", "__setitem__", "__delitem__", "__setattr__",
     "__delattr__", "__iadd__", "__ior__", "__iand__", "__isub__")
)  # fmt: skip
# Values nothing changes in place: a slot holding one is no state (its rebinding is its holder's change).
_SCALARS = (int, float, complex, str, bytes, bool, type(None), range, types.BuiltinFunctionType)
_IN_PLACE = (list, dict, set, bytearray)
# What a default changed in place is (the classic mutable default: a list, a dict, a set, a deque).
_CONTAINERS = (MutableSequence, MutableMapping, MutableSet, bytearray)
# Methods whose result is (or yields) what the object they are called on holds: a change to it is the
# object's (`TOOLS.get(k).append(…)`, `for v in TOOLS.values(): v.append(…)`). Other methods' results are
# new objects or no state (`SEEN.copy()`, `TOOLS.keys()` of text, `m.deque()`).
ITEM_READERS = frozenset(
    ("get", "setdefault", "pop", "popitem", "popleft", "values", "items", "__getitem__", "__iter__",
     "__next__", "import_module", "get_nowait")
)  # fmt: skip
# What a call of exec or eval changes cannot be read from its caller's bytecode (its code is a value).
UNREAD = frozenset(("exec(…)", "eval(…)"))
_AT_DEFINITION = frozenset(("__init_subclass__", "__set_name__", "__class_getitem__"))
_UNKNOWN = object()  # a held object not known here (an item of a dict, reached by a key at run time)
# Instructions that end a straight run of code (nothing falls through them to the next).
_ENDS = frozenset(
    ("RETURN_VALUE", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD", "JUMP_BACKWARD",
     "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE", "JUMP_NO_INTERRUPT", "JUMP")
)  # fmt: skip
# Instructions that pop their operands (1 - net of them) and push one result, untainted.
_RESULT = frozenset(
    ("COMPARE_OP", "IS_OP", "CONTAINS_OP", "BUILD_LIST", "BUILD_TUPLE", "BUILD_SET", "BUILD_MAP",
     "BUILD_CONST_KEY_MAP", "BUILD_STRING", "BUILD_SLICE", "FORMAT_VALUE", "UNARY_NOT", "UNARY_NEGATIVE",
     "UNARY_POSITIVE", "UNARY_INVERT", "GET_AWAITABLE", "CALL_FUNCTION_EX", "MAKE_FUNCTION")
)  # fmt: skip


@dataclass(frozen=True)
class Taint:
    """What a stack slot is of the module's state: its name (`SEEN`, `m.x`, `TOOLS[…]`), the object
    when known, and whether it is a method's default rather than the module's."""

    label: str
    value: Any = _UNKNOWN
    default: bool = False

    def attribute(self, name: str) -> Taint | None:
        """The taint of `value.name`: none for a scalar attribute (no state of its own)."""
        value = _UNKNOWN
        if self.value is not _UNKNOWN:
            try:  # static: reading it must not run a property's code
                value = inspect.getattr_static(self.value, name)
            except AttributeError:
                value = _UNKNOWN
            if isinstance(value, _SCALARS):
                return None
        return Taint(f"{self.label}.{name}", value, self.default)

    def item(self) -> Taint:
        return Taint(f"{self.label}[…]", _UNKNOWN, self.default)

    def called(self, method: str) -> Taint:
        """The taint of what `value.method(…)` returns of it (a method of ITEM_READERS)."""
        return Taint(f"{self.label}.{method}(…)", _UNKNOWN, self.default)


@dataclass(frozen=True)
class Change:
    """A method changing state every episode of the process shares: `label` is what it changes."""

    method: str
    label: str
    default: bool  # a mutable default of the method's own (no SHARED_STATE makes it per-episode)

    @property
    def unread(self) -> bool:
        """Whether it is code the check cannot read (exec or eval), not a named object."""
        return self.label in UNREAD

    @property
    def declared_as(self) -> str:
        """The name SHARED_STATE declares it by: what holds it, up to an item or a call's result
        (`TOOLS[…]` and `TOOLS.get(…)` are TOOLS's)."""
        marks = (self.label.find("["), self.label.find("("), self.label.find(".…"))
        cut = min((i for i in marks if i > 0), default=None)
        if cut is None or self.unread:
            return self.label
        head = self.label[:cut]
        if self.label[cut] != "(":  # an item, or an attribute named at run time (getattr)
            return head
        # A method's result is its owner's (TOOLS.get(…): TOOLS); a builtin's is itself (globals()).
        return head.rsplit(".", 1)[0] if "." in head else self.label[: self.label.index(")") + 1]


def held(name: str, value: Any) -> Taint | None:
    """The taint of global `name` the module holds as `value`: none for a scalar."""
    return None if isinstance(value, _SCALARS) else Taint(name, value)


class _Marker:
    """A value that is no state itself but leads to some: self (its attributes, its class), and the
    builtins whose call reads or changes their argument or the module (`_BUILTINS`)."""

    def __init__(self, name: str = "") -> None:
        self.name = name


@dataclass(frozen=True)
class _Own:
    """A function of the world's module (a module-level helper, or a method of the world called on self):
    its call is played with the caller's values bound to its parameters (`FOLLOWED_DEPTH` deep)."""

    function: Any
    kind: str  # "static" for a module function, "" for a method called on self


# How many calls deep a method's calls into its module's functions are followed.
FOLLOWED_DEPTH = 4


@dataclass(frozen=True)
class _Bound:
    """A method loaded off a tainted value, to be called: its result is the value's when it reads it."""

    owner: Taint
    name: str


_SELF, _TYPE, _SETS, _GETATTR, _NEXT, _ITER, _VARS, _GLOBALS = (_Marker() for _ in range(8))
# Builtins by what a call of each is: type(self) the world's class; setattr/delattr change their first
# argument; getattr gives an attribute of it, vars its namespace, iter and reversed its items as it
# does, next an item of it; globals() the module's own namespace; exec and eval run code the check
# cannot read.
_BUILTINS = {
    "type": _TYPE, "setattr": _SETS, "delattr": _SETS, "getattr": _GETATTR, "next": _NEXT,
    "iter": _ITER, "reversed": _ITER, "vars": _VARS, "globals": _GLOBALS,
    "exec": _Marker("exec(…)"), "eval": _Marker("eval(…)"),
}  # fmt: skip
Stack = list[Taint | _Marker | _Bound | _Own | None]


class _Method:
    """One method's code (and the code nested in it) played over taints."""

    def __init__(
        self,
        world: type,
        names: dict[str, Any],
        selfs: dict[str, Taint],
        active: tuple[Any, ...] = (),
        followed: dict[Any, dict[str, bool]] | None = None,
    ) -> None:
        # selfs: an attribute of self bound to a held object (`self.seen = SEEN` in __init__), shared by
        # every method of the world. active: the codes being played down to this one (no recursion).
        self.world, self.names, self.selfs, self.active = world, names, selfs, active
        self.keywords: tuple[str, ...] = ()  # the names of the next CALL's keyword arguments (KW_NAMES)
        self.followed = {} if followed is None else followed  # a followed call's changes, by its binding
        # A local or cell bound to a held object (or self), anywhere in the code: flow-insensitive.
        self.locals: dict[str, Taint | _Marker | _Bound | _Own] = {}
        self.changes: dict[str, bool] = {}  # label -> whether it is a default

    def play(self, function: Any, kind: str, bound: dict[str, Any] | None = None) -> None:
        """Play `function`, defined on the world as `kind` (a plain method, a classmethod or a static),
        its parameters `bound` to the caller's values (a followed call)."""
        code = function.__code__
        self.active = (*self.active, code)
        for name, value in _defaults(function):
            if isinstance(value, _CONTAINERS):  # a sentinel object default (dataclasses') is no state
                self.locals[name] = Taint(name, value, default=True)
        first = code.co_varnames[0] if code.co_argcount and kind != "static" else None
        if first is not None:  # self (or cls), also as a closure's free variable of the same name
            self.locals[first] = Taint(self.world.__name__, self.world) if kind == "class" else _SELF
        self.locals.update(bound or {})
        for _ in range(3):  # aliases found late in the code apply early in it (a loop's body)
            before = (dict(self.locals), dict(self.selfs))
            for nested in _codes(code):
                self._play(nested)
            if before == (self.locals, self.selfs):
                break

    def _changed(self, taint: Taint | _Marker | _Bound | _Own | None, what: str = "") -> None:
        if isinstance(taint, Taint):
            self.changes.setdefault(taint.label + what, taint.default)

    def _play(self, code: types.CodeType) -> None:
        instructions = list(dis.get_instructions(code))
        saved: dict[int, Stack] = {}
        stack: Stack = []
        reachable = True
        for ins in instructions:
            if ins.offset in saved:
                stack = _merged(stack, saved.pop(ins.offset)) if reachable else saved.pop(ins.offset)
            elif not reachable:
                stack = []  # an exception handler: its stack is not this run's
            reachable = True
            if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
                target = _moved(stack, _net(ins, jump=True))
                if isinstance(ins.argval, int) and ins.argval > ins.offset:
                    saved[ins.argval] = _merged(saved[ins.argval], target) if ins.argval in saved else target
            if ins.opname == "KW_NAMES" and ins.arg is not None:
                names = code.co_consts[ins.arg]
                self.keywords = tuple(names) if isinstance(names, tuple) else ()
            self._step(ins, stack)
            if ins.opname in _ENDS:
                reachable = False

    def _step(self, ins: dis.Instruction, stack: Stack) -> None:
        op, arg = ins.opname, ins.argval

        def pop() -> Taint | _Marker | _Bound | _Own | None:
            return stack.pop() if stack else None

        if op in ("LOAD_GLOBAL", "LOAD_NAME"):
            if op == "LOAD_GLOBAL" and ins.arg is not None and ins.arg & 1:
                stack.append(None)  # the NULL before a called global
            name = str(arg)
            if name in self.names:
                stack.append(held(name, self.names[name]))
            else:
                stack.append(_BUILTINS.get(name))
        elif op in ("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_CLASSDEREF"):
            stack.append(self.locals.get(str(arg)))
        elif op in ("STORE_FAST", "STORE_DEREF"):
            taint = pop()
            if taint is not None:
                self.locals.setdefault(str(arg), taint)
        elif op in ("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME"):
            if op != "STORE_NAME":
                self.changes.setdefault(str(arg), False)
            if op != "DELETE_GLOBAL":
                pop()
        elif op == "LOAD_ATTR":
            owner = pop()
            if owner is _SELF and str(arg) == "__class__":
                stack.append(Taint(self.world.__name__, self.world))
            elif owner is _SELF:
                stack.append(self.selfs.get(str(arg)))
            else:
                stack.append(owner.attribute(str(arg)) if isinstance(owner, Taint) else None)
        elif op == "LOAD_METHOD":
            owner = pop()
            if isinstance(owner, Taint) and str(arg) in MUTATORS:
                self._changed(owner)
            stack.extend(
                [None, _Bound(owner, str(arg)) if isinstance(owner, Taint) else self._own(owner, arg)]
            )
        elif op == "IMPORT_NAME":  # a module is one object for the process, whoever imports it
            del stack[len(stack) - min(len(stack), 2) :]
            stack.append(held(str(arg), sys.modules.get(str(arg), _UNKNOWN)))
        elif op == "IMPORT_FROM":
            owner = stack[-1] if stack else None
            stack.append(owner.attribute(str(arg)) if isinstance(owner, Taint) else None)
        elif op in ("FOR_ITER", "UNPACK_SEQUENCE", "UNPACK_EX"):  # what it takes out of a value
            source = stack[-1] if stack else None
            if op != "FOR_ITER":
                pop()
            pushed = _net(ins) + (op != "FOR_ITER")
            stack.extend([source.item() if isinstance(source, Taint) else None] * pushed)
        elif op in ("STORE_ATTR", "DELETE_ATTR"):
            owner = pop()
            value = pop() if op == "STORE_ATTR" else None
            if owner is _SELF and isinstance(value, Taint):
                self.selfs.setdefault(str(arg), value)  # self.x = SEEN: self.x is SEEN from here on
            else:
                self._changed(owner, f".{arg}")
        elif op in ("STORE_SUBSCR", "DELETE_SUBSCR"):
            pop()  # the key
            container = pop()
            if op == "STORE_SUBSCR":
                pop()
            self._changed(container)
        elif op == "BINARY_SUBSCR":
            pop()
            container = pop()
            stack.append(container.item() if isinstance(container, Taint) else None)
        elif op == "BINARY_OP":
            pop()
            left = pop()
            in_place = ins.argrepr.endswith("=")
            if in_place and isinstance(left, Taint) and isinstance(left.value, _IN_PLACE):
                self._changed(left)
            stack.append(left if in_place else None)
        elif op == "COPY":
            stack.append(stack[-int(arg)] if len(stack) >= int(arg) else None)
        elif op == "SWAP":
            if len(stack) >= int(arg):
                stack[-1], stack[-int(arg)] = stack[-int(arg)], stack[-1]
        elif op == "KW_NAMES":  # its names are a constant of the code (_play reads them)
            pass
        elif op == "CALL":
            args = [pop() for _ in range(int(arg))]
            callable_ = pop()
            pop()  # the NULL or the method's owner
            keywords, self.keywords = self.keywords, ()
            given = args[::-1]  # in the order written: positional ones, then the keywords'
            cut = max(0, len(given) - len(keywords))
            self._follow(callable_, given[:cut], dict(zip(keywords, given[cut:], strict=False)))
            if callable_ is _SETS and args:  # setattr(m, "x", v): m changed, as by m.x = v
                self._changed(args[-1])
            if isinstance(callable_, _Marker) and callable_.name in UNREAD:
                self.changes.setdefault(callable_.name, False)
            stack.append(self._result(callable_, args))
        elif op in ("PRECALL", "RESUME", "NOP", "EXTENDED_ARG", "CACHE"):
            pass
        else:
            net = _net(ins)
            if op in _RESULT:
                del stack[len(stack) - min(len(stack), 1 - net) :]
                stack.append(None)
            else:
                stack[:] = _moved(stack, net)

    def _own(self, owner: Any, name: Any) -> _Own | None:
        """A method of the world loaded off self (`self._remember(…)`), to be followed when called."""
        if owner is not _SELF:
            return None
        method = inspect.getattr_static(self.world, str(name), None)
        function = method.__func__ if isinstance(method, classmethod | staticmethod) else method
        if not inspect.isfunction(function) or function.__module__ != self.world.__module__:
            return None
        return _Own(function, "static" if isinstance(method, staticmethod) else "")

    def _follow(self, callable_: Any, positional: Stack, keywords: dict[str, Any]) -> None:
        """Play a call of a function of the world's module (a module-level helper, a method on self) with
        the caller's values bound to its parameters: `_push(SEEN, a)` changes SEEN as `SEEN.append(a)`
        would, and a helper's own `global COUNT; COUNT += 1` is the caller's change."""
        if isinstance(callable_, Taint) and inspect.isfunction(callable_.value):
            callee = _Own(callable_.value, "static")
        elif isinstance(callable_, _Own):
            callee = callable_
        else:
            return
        function = callee.function
        if function.__module__ != self.world.__module__ or len(self.active) >= FOLLOWED_DEPTH:
            return
        if function.__code__ in self.active:
            return
        params = function.__code__.co_varnames[: function.__code__.co_argcount]
        params = params[1:] if callee.kind == "" else params  # self is bound by play
        given = {**dict(zip(params, positional, strict=False)), **keywords}
        bound = {name: value for name, value in given.items() if value is not None}
        # Played once per binding (the caller's loop plays its code up to 3 times).
        key = (
            function.__code__,
            tuple((n, v.label if isinstance(v, Taint) else id(v)) for n, v in bound.items()),
        )
        if key not in self.followed:
            followed = _Method(self.world, function.__globals__, self.selfs, self.active, self.followed)
            followed.play(function, callee.kind, bound)
            self.followed[key] = dict(followed.changes)
        for label, default in self.followed[key].items():
            self.changes.setdefault(label, default)

    def _result(self, callable_: Any, args: Stack) -> Taint | None:
        """What a call returns of the state it reaches (args in reverse: the first is last)."""
        first = args[-1] if args else None
        if callable_ is _TYPE and len(args) == 1 and first is _SELF:  # the world's class, shared
            return Taint(self.world.__name__, self.world)
        if callable_ is _GLOBALS:
            return Taint("globals()", self.names)
        if isinstance(first, Taint) and callable_ in (_GETATTR, _NEXT, _ITER, _VARS):
            if callable_ in (_NEXT, _ITER):
                return first.item() if callable_ is _NEXT else first
            return Taint(
                f"{first.label}.{'…' if callable_ is _GETATTR else '__dict__'}", _UNKNOWN, first.default
            )
        if isinstance(callable_, _Bound) and callable_.name in ITEM_READERS:
            return callable_.owner.called(callable_.name)
        return None


def _net(ins: dis.Instruction, jump: bool = False) -> int:
    arg = ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None
    return dis.stack_effect(ins.opcode, arg, jump=jump)


def _moved(stack: Stack, net: int) -> Stack:
    """The stack after an instruction of `net` effect whose pushes are no state."""
    return stack[: len(stack) + net] if net < 0 else [*stack, *([None] * net)]


def _merged(a: Stack, b: Stack) -> Stack:
    """Two states arriving at one instruction: a slot tainted on either path is tainted."""
    size = min(len(a), len(b))
    return [x if x is not None else y for x, y in zip(a[len(a) - size :], b[len(b) - size :], strict=True)]


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and the code objects nested in it (comprehensions, inner functions, lambdas)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _defaults(function: Any) -> Iterable[tuple[str, Any]]:
    code = function.__code__
    positional = code.co_varnames[: code.co_argcount]
    defaults = function.__defaults__ or ()
    yield from zip(positional[len(positional) - len(defaults) :], defaults, strict=True)
    yield from (function.__kwdefaults__ or {}).items()


def world_changes(world: type) -> list[Change]:
    """Every change of shared state the methods `world` defines make, in the order of its methods; each
    method's globals are those of the module that defined it (a method assigned from another module's
    function reads that module's)."""
    selfs: dict[str, Taint] = {}
    methods = []
    for method_name, method in list(world.__dict__.items()):
        kind = (
            "class"
            if isinstance(method, classmethod)
            else "static"
            if isinstance(method, staticmethod)
            else ""
        )
        function = inspect.unwrap(method.__func__ if kind else method)
        # Another module's function (typing's Protocol __init__) is not the world's code; a class's
        # creation hooks run once, when it is defined, never in an episode.
        ours = getattr(function, "__module__", None) == world.__module__
        if ours and hasattr(function, "__code__") and method_name not in _AT_DEFINITION:
            methods.append((method_name, function, kind))
    found: list[Change] = []
    for _ in range(2):  # an attribute of self set in one method (__init__) read in another
        found = []
        for method_name, function, kind in methods:
            played = _Method(world, function.__globals__, selfs, followed={})
            played.play(function, kind)
            found += [Change(method_name, label, default) for label, default in played.changes.items()]
    return found
