"""Which SQL text the read-only SQL tool accepts, decided with PostgreSQL's own grammar.

This module is the worker side: ``checked_text`` runs in an isolated worker process (``isolated``),
because libpg_query's tree is built recursively in C and a long flat expression crashes the process
that builds it. Before any parser sees the text, ``within_limits`` bounds it with the scanner alone
(iterative, cheap): characters, tokens and parenthesis nesting.

The text is parsed by libpg_query (``pglast``), the parser of the server itself, so comments, string
literals, dollar quotes, ``E''`` escapes, quoted and unicode identifiers mean here exactly what they mean
to the server. The tree is then checked against allow-lists, never deny-lists:

- exactly one statement, a plain ``SELECT`` (CTEs, set operations and ``VALUES`` included), with no
  ``INTO``, no locking clause and no data-modifying CTE;
- every node of the tree is of a kind listed in ``_NODES`` (expressions, joins, subqueries...);
- every function is on ``ALLOWED_FUNCTIONS`` (unqualified or ``pg_catalog.``), every cast is to a type on
  ``ALLOWED_TYPES``, and no session value (``current_user``...) is read;
- every table is one of the tenant's visible tables (unqualified, or qualified by its own schema) or a
  CTE in scope at that point: catalogue tables and other schemas are refused by name, not by privilege.

A refusal is an ``SqlRefused`` (a ``ValueError``, so it crosses the process boundary as a refusal)
naming what was refused and what to use instead, so a model can fix its query.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from pglast import ast, parse_sql
from pglast.enums import SQLValueFunctionOp
from pglast.parser import ParseError, scan

#: The longest SQL text accepted anywhere (a tool call, a saved query, a playbook step), in characters.
MAX_SQL_CHARS = 16_000
#: The most tokens (words, numbers, operators, punctuation) one statement may have.
MAX_SQL_TOKENS = 4_000
#: The deepest parenthesis nesting accepted.
MAX_SQL_NESTING = 64


class SqlRefused(ValueError):
    """The text is not one bounded read of the tenant's tables; the message says why and what to use."""


#: Functions an agent's query may call: aggregates, window functions, arithmetic, text, dates, arrays
#: and JSON building. Nothing that sleeps, locks, reads files or settings, touches large objects,
#: sequences or other sessions, or builds values of unbounded size from a number (``repeat``, ``lpad``,
#: ``generate_series``). ``regexp_matches`` returns sets, but never more rows than its text has characters:
#: compiled meta systems read every amount of an input with it.
ALLOWED_FUNCTIONS: frozenset[str] = frozenset(
    """
    count sum avg min max stddev stddev_pop stddev_samp variance var_pop var_samp corr covar_pop
    covar_samp regr_slope regr_intercept regr_r2 regr_count regr_avgx regr_avgy regr_sxx regr_syy
    regr_sxy percentile_cont percentile_disc mode bool_and bool_or every string_agg array_agg json_agg
    jsonb_agg json_object_agg jsonb_object_agg row_number rank dense_rank percent_rank cume_dist ntile
    lag lead first_value last_value nth_value abs ceil ceiling floor round trunc sqrt cbrt exp ln log
    log10 power pow sign mod div width_bucket pi degrees radians scale lower upper initcap length
    char_length character_length octet_length substr substring btrim ltrim rtrim trim replace split_part
    concat concat_ws left right position strpos starts_with to_char to_number to_date to_timestamp md5
    regexp_replace regexp_match regexp_matches regexp_like date_trunc date_part extract age now make_date make_time
    make_interval make_timestamp make_timestamptz date_bin justify_days justify_hours justify_interval
    isfinite timezone array_length cardinality array_position array_to_string unnest array_lower
    array_upper to_json to_jsonb row_to_json json_build_object jsonb_build_object json_build_array
    jsonb_build_array json_extract_path_text jsonb_extract_path_text jsonb_array_length
    json_array_length jsonb_typeof json_typeof
    """.split()  # noqa: SIM905
)
#: Types a value may be cast to.
ALLOWED_TYPES: frozenset[str] = frozenset(
    """
    int2 int4 int8 smallint integer int bigint numeric decimal float4 float8 real text varchar bpchar
    char bool boolean date time timetz timestamp timestamptz interval json jsonb uuid
    """.split()  # noqa: SIM905
)
_SESSION_VALUES_ALLOWED = frozenset(
    {
        SQLValueFunctionOp.SVFOP_CURRENT_DATE,
        SQLValueFunctionOp.SVFOP_CURRENT_TIME,
        SQLValueFunctionOp.SVFOP_CURRENT_TIME_N,
        SQLValueFunctionOp.SVFOP_CURRENT_TIMESTAMP,
        SQLValueFunctionOp.SVFOP_CURRENT_TIMESTAMP_N,
        SQLValueFunctionOp.SVFOP_LOCALTIME,
        SQLValueFunctionOp.SVFOP_LOCALTIME_N,
        SQLValueFunctionOp.SVFOP_LOCALTIMESTAMP,
        SQLValueFunctionOp.SVFOP_LOCALTIMESTAMP_N,
    }
)
#: Kinds of parse-tree node a query may contain; any other kind is refused by name.
_NODES: frozenset[str] = frozenset(
    """
    RawStmt SelectStmt ResTarget ColumnRef A_Star A_Const String Integer Float Boolean BitString A_Expr
    BoolExpr NullTest BooleanTest FuncCall TypeCast TypeName SortBy WindowDef RangeVar RangeSubselect
    RangeFunction JoinExpr Alias SubLink CaseExpr CaseWhen CoalesceExpr MinMaxExpr WithClause
    CommonTableExpr A_Indirection A_Indices A_ArrayExpr RowExpr CollateClause SQLValueFunction
    GroupingSet ParamRef
    """.split()  # noqa: SIM905
)
#: psycopg's placeholders (``%(name)s``, ``%s``) and its escaped percent, as psycopg reads them.
_PLACEHOLDER = re.compile(r"%\(\w+\)[sbt]|%[sbt]|%%")


@dataclass(frozen=True, kw_only=True)
class CheckedSelect:
    """A statement that passed the check."""

    text: str
    """The statement as given, without trailing semicolons and comments: what is executed."""


def within_limits(sql: str) -> None:
    """Refuse text too long, too many tokens or too deeply nested for a parser to take safely; only
    the scanner (iterative) reads it."""
    if "\x00" in sql:
        raise SqlRefused("SQL refused: the query contains a NUL character")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError:
        raise SqlRefused("SQL refused: the query is not valid UTF-8 text") from None
    if len(sql) > MAX_SQL_CHARS:
        raise SqlRefused(
            f"SQL refused: the query is {len(sql):,} characters; at most {MAX_SQL_CHARS:,} are read"
        )
    try:
        tokens = scan(sql)
    except ParseError as error:
        raise SqlRefused(f"SQL refused: syntax error: {error}") from None
    if len(tokens) > MAX_SQL_TOKENS:
        raise SqlRefused(
            f"SQL refused: the query has {len(tokens):,} tokens; at most {MAX_SQL_TOKENS:,} are read"
        )
    depth = deepest = 0
    for token in tokens:
        if token.name == "ASCII_40":
            depth += 1
            deepest = max(deepest, depth)
        elif token.name == "ASCII_41":
            depth -= 1
    if deepest > MAX_SQL_NESTING:
        raise SqlRefused(f"SQL refused: parentheses nest {deepest} deep; at most {MAX_SQL_NESTING} are read")


def checked_text(sql: str, tables: Collection[str], schema: str | None, with_params: bool) -> str:
    """The text that is executed if ``sql`` passes the check (the worker's entry point)."""
    return check_statement(sql, tables=tables, schema=schema, with_params=with_params).text


def check_statement(
    sql: str, *, tables: Collection[str], schema: str | None = None, with_params: bool = False
) -> CheckedSelect:
    """Accept ``sql`` if it is one bounded read of ``tables``, else raise SqlRefused saying why.
    Parses in this process: call it only in an isolated worker (``check_select_only`` does).

    ``tables`` are the relation names the tenant may read; ``schema`` is the tenant's schema (a name
    qualified by it is accepted too). ``with_params``: the text carries psycopg placeholders
    (``%(name)s``) that the driver binds."""
    if not sql or not sql.strip():
        raise SqlRefused("SQL refused: the query is empty")
    within_limits(sql)
    # Placeholders become parameters of the same length, so positions in both texts agree.
    parsed_text = _PLACEHOLDER.sub(_as_parameter, sql) if with_params else sql
    try:
        statements = parse_sql(parsed_text)
    except ParseError as error:
        raise SqlRefused(f"SQL refused: syntax error: {error}") from None
    if len(statements) != 1:
        raise SqlRefused(
            f"SQL refused: send exactly one statement (found {len(statements)}); split it into queries"
        )
    statement = statements[0].stmt
    if not isinstance(statement, ast.SelectStmt):
        raise SqlRefused(
            f"SQL refused: only a SELECT (or WITH ... SELECT) is allowed, not {_kind(statement)}"
        )
    _Check(tables=frozenset(tables), schema=schema, with_params=with_params).select(statement, scope=())
    return CheckedSelect(text=sql[: _statement_end(parsed_text)])


def _as_parameter(match: re.Match[str]) -> str:
    token = match.group(0)
    # Right-aligned, so the parameter ends where the placeholder ends.
    return "% " if token == "%%" else "$1".rjust(len(token))


def _statement_end(text: str) -> int:
    end = 0
    for token in scan(text):
        if token.name not in ("SQL_COMMENT", "C_COMMENT", "ASCII_59"):
            end = token.end + 1
    return end


def _kind(node: Any) -> str:
    name = type(node).__name__
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name.removesuffix("Stmt")).upper() or name


def _name(parts: tuple[Any, ...] | None) -> list[str]:
    return [getattr(part, "sval", "") or "" for part in parts or ()]


def _slots(node: ast.Node) -> tuple[str, ...]:
    slots: tuple[str, ...] = getattr(node, "__slots__", ())
    return slots


def _children(node: ast.Node) -> Iterator[Any]:
    for slot in _slots(node):
        value = getattr(node, slot, None)
        if isinstance(value, ast.Node):
            yield value
        elif isinstance(value, tuple | list):
            yield from (item for item in value if isinstance(item, ast.Node | tuple | list))


@dataclass(frozen=True, kw_only=True)
class _Check:
    tables: frozenset[str]
    schema: str | None
    with_params: bool

    def select(self, node: ast.SelectStmt, scope: tuple[str, ...]) -> None:
        if node.intoClause is not None:
            raise SqlRefused("SQL refused: SELECT ... INTO creates a table; drop the INTO clause")
        if node.lockingClause:
            raise SqlRefused("SQL refused: FOR UPDATE/SHARE locks rows; drop the locking clause")
        with_clause = node.withClause
        if with_clause is not None:
            ctes = with_clause.ctes or ()
            names = [cte.ctename for cte in ctes]
            for index, cte in enumerate(ctes):
                if not isinstance(cte.ctequery, ast.SelectStmt):
                    raise SqlRefused(
                        f"SQL refused: the CTE {cte.ctename!r} is a {_kind(cte.ctequery)}; only SELECT"
                        " CTEs are allowed"
                    )
                # A CTE sees the ones before it; a recursive WITH also sees itself and those after.
                visible = names if with_clause.recursive else names[:index]
                self.select(cte.ctequery, (*scope, *visible))
            scope = (*scope, *names)
        for slot in _slots(node):
            if slot != "withClause":
                self.walk(getattr(node, slot, None), scope)

    def walk(self, node: Any, scope: tuple[str, ...]) -> None:
        if isinstance(node, tuple | list):
            for item in node:
                self.walk(item, scope)
            return
        if not isinstance(node, ast.Node):
            return
        kind = type(node).__name__
        if kind not in _NODES:
            raise SqlRefused(f"SQL refused: {kind} expressions are not allowed in a read-only query")
        if isinstance(node, ast.SelectStmt):
            self.select(node, scope)
            return
        if isinstance(node, ast.FuncCall):
            self.function(node)
        elif isinstance(node, ast.TypeCast | ast.TypeName):
            type_name = node.typeName if isinstance(node, ast.TypeCast) else node
            self.cast(type_name)
        elif isinstance(node, ast.RangeVar):
            self.relation(node, scope)
            return
        elif isinstance(node, ast.SQLValueFunction) and node.op not in _SESSION_VALUES_ALLOWED:
            raise SqlRefused("SQL refused: session values (current_user, current_schema...) are not readable")
        elif isinstance(node, ast.ParamRef) and not self.with_params:
            raise SqlRefused("SQL refused: $n parameters are not allowed; write the values in the query")
        for child in _children(node):
            self.walk(child, scope)

    def function(self, node: ast.FuncCall) -> None:
        parts = _name(node.funcname)
        name = parts[-1]
        schema = parts[0] if len(parts) > 1 else "pg_catalog"
        if schema != "pg_catalog" or len(parts) > 2 or name not in ALLOWED_FUNCTIONS:
            raise SqlRefused(
                f"SQL refused: function {'.'.join(parts)}() is not allowed; use aggregates, window,"
                " arithmetic, text, date, array or JSON functions"
            )

    def cast(self, node: ast.TypeName | None) -> None:
        parts = _name(node.names if node is not None else None)
        if not parts:
            return
        name = parts[-1]
        schema = parts[0] if len(parts) > 1 else "pg_catalog"
        if schema != "pg_catalog" or len(parts) > 2 or name not in ALLOWED_TYPES or (node and node.setof):
            raise SqlRefused(
                f"SQL refused: a cast to {'.'.join(parts)} is not allowed; cast to numbers, text, "
                "booleans, dates, times, intervals, JSON or uuid"
            )

    def relation(self, node: ast.RangeVar, scope: tuple[str, ...]) -> None:
        name = node.relname
        if node.catalogname:
            raise SqlRefused(
                f"SQL refused: {node.catalogname}.{node.schemaname}.{name} names another database"
            )
        if node.schemaname is None and name in scope:
            return
        if (node.schemaname is None or node.schemaname == self.schema) and name in self.tables:
            return
        shown = f"{node.schemaname}.{name}" if node.schemaname else name
        raise SqlRefused(
            f"SQL refused: {shown} is not one of your tables; use {', '.join(sorted(self.tables)) or 'none'}"
        )
