"""Parsing types, attributes and locations (the layer under op parsing)."""

from __future__ import annotations

import difflib

from crane.ir.attributes import (
    ArrayAttr,
    Attribute,
    BoolAttr,
    DenseIntsAttr,
    DictAttr,
    EnumAttr,
    FloatAttr,
    IntAttr,
    StringAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
)
from crane.ir.lexer import Token, unescape
from crane.ir.location import UNKNOWN, FileLineColLoc, FusedLoc, Location, NameLoc
from crane.ir.parser_base import _SCALARS, _SHAPE, BaseParser, ParseError, _check_int_range
from crane.ir.types import (
    DYNAMIC,
    MEMORY_SPACES,
    SCALAR_NAMES,
    BufferType,
    FunctionType,
    TensorType,
    Type,
)

_SHAPED_FORMS = {"tensor": "tensor<DxDx...xELEMENT>", "buffer": "buffer<DxDx...xELEMENT, sram|dram>"}


class AttributeParser(BaseParser):
    """Types, attributes and locations."""

    # ----- types

    def parse_type(self) -> Type:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "(":
            return self._parse_function_type()
        if tok.kind == "shaped":
            return self._parse_shaped_type(tok)
        if tok.kind != "ident":
            raise self.error(f"expected a type, found {self._describe(tok)}")
        scalar = _SCALARS.get(tok.text)
        if scalar is not None:
            self._index += 1
            return scalar
        if tok.text in _SHAPED_FORMS:  # the lexer's shaped-type pattern did not match what follows
            raise self.error(f"malformed {tok.text} type: write {_SHAPED_FORMS[tok.text]}, each dimension "
                             f"a whole number or '?'", tok)
        close = difflib.get_close_matches(tok.text, [*SCALAR_NAMES, "tensor", "buffer"], n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise self.error(f"unknown type '{tok.text}'{hint}", tok)

    def _parse_shaped_type(self, tok: Token) -> Type:
        self._index += 1
        kind, _, body = tok.text.partition("<")
        shape = _SHAPE.match(body)
        assert shape is not None  # the pattern accepts any text
        dims_text, element_name = shape.group(1), shape.group(2)
        element = _SCALARS.get(element_name)
        if element is None:
            offset = tok.start + len(tok.text) - len(element_name)
            raise ParseError(f"unknown element type '{element_name}' in {kind} type "
                             "(dimensions are integers or '?' followed by 'x')",
                             offset, len(element_name))
        dims = tuple(DYNAMIC if d == "?" else int(d) for d in dims_text.split("x")[:-1])
        result: Type
        if kind == "tensor":
            result = TensorType(dims, element)
        else:
            self.parse_punct(",", "before the memory space of a buffer")
            space = self.next()
            if space.text not in MEMORY_SPACES:
                raise self.error(f"unknown memory space '{space.text}' (expected sram or dram)", space)
            result = BufferType(dims, element, space.text)
        self.parse_punct(">", f"to close the {kind} type")
        return result

    def parse_type_list_parens(self) -> tuple[Type, ...]:
        self.parse_punct("(")
        types: list[Type] = []
        if not self.parse_optional_punct(")"):
            types.append(self.parse_type())
            while self.parse_optional_punct(","):
                types.append(self.parse_type())
            self.parse_punct(")", "to close the type list")
        return tuple(types)

    def _parse_function_type(self) -> FunctionType:
        inputs = self.parse_type_list_parens()
        self.parse_punct("->", "in a function type")
        if self.peek().text == "(":
            start = self._index
            results = self.parse_type_list_parens()
            if self.peek().text == "->":  # a function type as the single result
                self._index = start
                results = (self._parse_function_type(),)
            return FunctionType(inputs, results)
        return FunctionType(inputs, (self.parse_type(),))

    def parse_function_type(self) -> FunctionType:
        tok = self.peek()
        if tok.text != "(":
            raise self.error(f"expected a function type like '(i32) -> i32', found {self._describe(tok)}")
        return self._parse_function_type()

    # ----- attributes

    def parse_attribute(self) -> Attribute:
        tok = self.peek()
        kind = tok.kind
        if kind == "int":
            self._index += 1
            value = int(tok.text)
            if self.peek().text == ":" and self.peek(1).text in ("i1", "i8", "i16", "i32", "i64"):
                self.parse_punct(":")
                width_tok = self.next()
                width = int(width_tok.text[1:])
                _check_int_range(value, width, tok)
                return IntAttr(value, width)
            return IntAttr(value)
        if kind == "float":
            self._index += 1
            return FloatAttr(float(tok.text))
        if kind == "string":
            self._index += 1
            return StringAttr(unescape(tok.text))
        if kind == "symbol":
            return self._parse_symbol_ref()
        if kind == "hash":
            return self._parse_enum()
        if kind in ("ident", "shaped"):
            return self._parse_keyword_attribute(tok)
        if tok.text == "[":
            return self._parse_array()
        if tok.text == "{":
            return DictAttr(tuple(self.parse_attr_dict().items()))
        if tok.text == "(":
            return TypeAttr(self._parse_function_type())
        if tok.text == "-" and self.peek(1).text == "inf":
            self._index += 2
            return FloatAttr(float("-inf"))
        raise self.error(f"expected an attribute value, found {self._describe(tok)}", tok)

    def _parse_keyword_attribute(self, tok: Token) -> Attribute:
        word = tok.text
        simple: dict[str, Attribute] = {
            "true": BoolAttr(True), "false": BoolAttr(False), "unit": UnitAttr(),
            "inf": FloatAttr(float("inf")), "nan": FloatAttr(float("nan")),
        }
        if word in simple:
            self._index += 1
            return simple[word]
        if word == "array" and self.peek(1).text == "<":
            return self._parse_dense_ints()
        return TypeAttr(self.parse_type())

    def _parse_dense_ints(self) -> DenseIntsAttr:
        self.next()
        self.parse_punct("<")
        self.parse_keyword("i64")
        values: list[int] = []
        if self.parse_optional_punct(":"):
            values.append(self.parse_integer())
            while self.parse_optional_punct(","):
                values.append(self.parse_integer())
        self.parse_punct(">", "to close the array")
        return DenseIntsAttr(tuple(values))

    def _parse_array(self) -> ArrayAttr:
        self.parse_punct("[")
        elements: list[Attribute] = []
        if not self.parse_optional_punct("]"):
            elements.append(self.parse_attribute())
            while self.parse_optional_punct(","):
                elements.append(self.parse_attribute())
            self.parse_punct("]", "to close the array")
        return ArrayAttr(tuple(elements))

    def _parse_symbol_ref(self) -> SymbolRefAttr:
        root = self.parse_symbol_name()
        nested: list[str] = []
        while self.parse_optional_punct("::"):
            nested.append(self.parse_symbol_name())
        return SymbolRefAttr(root, tuple(nested))

    def _parse_enum(self) -> EnumAttr:
        tok = self.next()
        enum = tok.text[1:]
        self.parse_punct("<", f"after '{tok.text}'")
        case_tok = self.next()
        if case_tok.kind != "ident":
            raise self.error(f"expected an enum case name, found {self._describe(case_tok)}", case_tok)
        cases = self.context.enum_cases(enum)
        if cases is not None and case_tok.text not in cases:
            close = difflib.get_close_matches(case_tok.text, cases, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f" (expected one of {', '.join(cases)})"
            raise self.error(f"'{case_tok.text}' is not a case of #{enum}{hint}", case_tok)
        self.parse_punct(">", "to close the enum attribute")
        return EnumAttr(enum, case_tok.text)

    def parse_attr_dict(self) -> dict[str, Attribute]:
        """``{k = v, flag}`` (the braces are required)."""
        self.parse_punct("{")
        attrs: dict[str, Attribute] = {}
        if self.parse_optional_punct("}"):
            return attrs
        while True:
            key_tok = self.next()
            if key_tok.kind not in ("ident", "string"):
                raise self.error(f"expected an attribute name, found {self._describe(key_tok)}", key_tok)
            key = unescape(key_tok.text) if key_tok.kind == "string" else key_tok.text
            if key in attrs:
                raise self.error(f"duplicate attribute '{key}'", key_tok)
            attrs[key] = self.parse_attribute() if self.parse_optional_punct("=") else UnitAttr()
            if self.parse_optional_punct("}"):
                return attrs
            self.parse_punct(",", "or '}' in an attribute dictionary")

    def parse_optional_attr_dict(self) -> dict[str, Attribute]:
        return self.parse_attr_dict() if self.peek().text == "{" else {}

    # ----- locations

    def parse_optional_trailing_location(self) -> Location | None:
        tok = self.peek()
        if tok.kind != "ident" or tok.text != "loc" or self.peek(1).text != "(":
            return None
        self._index += 2
        loc = self.parse_location()
        self.parse_punct(")", "to close the location")
        return loc

    def parse_location(self) -> Location:
        if self.parse_optional_keyword("unknown"):
            return UNKNOWN
        if self.parse_optional_keyword("fused"):
            self.parse_punct("[")
            parts = [self.parse_location()]
            while self.parse_optional_punct(","):
                parts.append(self.parse_location())
            self.parse_punct("]")
            return FusedLoc(tuple(parts))
        name = self.parse_string()
        if self.parse_optional_punct(":"):
            line = self.parse_integer()
            self.parse_punct(":")
            return FileLineColLoc(name, line, self.parse_integer())
        if self.parse_optional_punct("("):
            child = self.parse_location()
            self.parse_punct(")")
            return NameLoc(name, child)
        return NameLoc(name)

