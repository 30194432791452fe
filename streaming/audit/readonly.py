"""``audit sql`` runs read-only statements only: the temporary views it registers are backed
by the job's Delta tables, and ``DELETE FROM rebalance_events`` would change them.

The check asks Spark's own parser (the session's, so Delta's statements are known too) for
the statement's plan and accepts it only when the plan is read-only. No text is scanned:
quoting tricks (``r'\\'``, comments, backticks) are the parser's business, and what the
parser makes of them is what would run.

A plan is read-only when

* its root is one of :data:`READ_ONLY_COMMANDS` (``SHOW ...``, ``DESCRIBE ...``,
  ``DESCRIBE HISTORY``/``DETAIL``), or ``EXPLAIN`` of a read-only plan; or
* every node of it, through its children, its CTE definitions (``WITH``) and the subqueries
  in its expressions, is one of :data:`QUERY_OPERATORS`.

It is a list of what is allowed, not of what is forbidden: a node the list does not name
(``InsertIntoStatement``, ``DeleteFromTable``, ``MergeIntoTable``, Delta's
``OptimizeTableCommand``, ``UnresolvedExecuteImmediate``, a scripting ``CompoundBody``, one a
later Spark adds) is refused, and the message names it.
"""

from __future__ import annotations

from typing import Any

from streaming.audit import QueryError

__all__ = ["QUERY_OPERATORS", "READ_ONLY_COMMANDS", "check_read_only", "plan_node_names"]

#: Logical plan nodes (simple class names) of the parsed form of a query.
QUERY_OPERATORS: frozenset[str] = frozenset(
    {
        "Aggregate",
        "CTERelationDef",
        "CTERelationRef",
        "Deduplicate",
        "Distinct",
        "Except",
        "Expand",
        "Filter",
        "Generate",
        "GlobalLimit",
        "Intersect",
        "Join",
        "LateralJoin",
        "LocalLimit",
        "LocalRelation",
        "Offset",
        "OneRowRelation",
        "Pivot",
        "PlanWithUnresolvedIdentifier",
        "Project",
        "Range",
        "RelationTimeTravel",
        "Repartition",
        "RepartitionByExpression",
        "Sample",
        "Sort",
        "SubqueryAlias",
        "Tail",
        "Union",
        "UnresolvedHaving",
        "UnresolvedHint",
        "UnresolvedInlineTable",
        "UnresolvedRelation",
        "UnresolvedSubqueryColumnAliases",
        "UnresolvedTVFAliases",
        "UnresolvedTableValuedFunction",
        "UnresolvedWith",
        "Unpivot",
        "Window",
        "WithCTE",
        "WithWindowDefinition",
    }
)
#: Commands that only read (their children name a table or namespace).
READ_ONLY_COMMANDS: frozenset[str] = frozenset(
    {
        "DescribeColumn",
        "DescribeDeltaDetailCommand",
        "DescribeDeltaHistory",
        "DescribeFunction",
        "DescribeNamespace",
        "DescribeRelation",
        "ShowColumns",
        "ShowCreateTable",
        "ShowFunctions",
        "ShowNamespaces",
        "ShowPartitions",
        "ShowTableProperties",
        "ShowTables",
        "ShowTablesExtended",
        "ShowViews",
    }
)
_EXPLAIN = "ExplainCommand"


def _simple_name(node: Any) -> str:
    name: str = node.getClass().getSimpleName()
    return name.rstrip("$")  # Scala objects (CurrentNamespace$)


def _seq(jvm: Any, seq: Any) -> list[Any]:
    return list(jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))


def plan_node_names(spark: Any, statement: str) -> list[str]:
    """The simple class names of the parsed plan's nodes, the root first (module docstring:
    children, CTE definitions and expression subqueries). Raises :class:`QueryError` when
    Spark cannot parse ``statement``."""
    return [_simple_name(n) for n in _nodes(spark, _parse(spark, statement))]


def _parse(spark: Any, statement: str) -> Any:
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    if not statement.strip():
        raise QueryError("sql: the statement is empty")
    parser = spark._jsparkSession.sessionState().sqlParser()
    try:
        return parser.parsePlan(statement)
    except (PySparkException, Py4JError) as e:
        text = str(e).strip()
        raise QueryError(f"sql: {text.splitlines()[0] if text else type(e).__name__}") from None


def _nodes(spark: Any, root: Any) -> list[Any]:
    jvm = spark._jvm
    logical = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.plans.logical.LogicalPlan")
    out: list[Any] = []
    todo = [root]
    while todo:
        node = todo.pop()
        out.append(node)
        nested = [
            *_seq(jvm, node.children()),
            *_seq(jvm, node.innerChildren()),
            *_seq(jvm, node.subqueries()),
        ]
        unique: list[Any] = []  # Spark's innerChildren holds the subqueries again
        for n in nested:
            if logical.isInstance(n) and not any(n.equals(u) for u in unique):
                unique.append(n)
        todo.extend(reversed(unique))
    return out


def check_read_only(spark: Any, statement: str) -> None:
    """Raise :class:`QueryError` unless Spark parses ``statement`` into a read-only plan
    (module docstring). Nothing runs: the statement is only parsed."""
    _check_plan(spark, _parse(spark, statement))


def _check_plan(spark: Any, plan: Any) -> None:
    root = _simple_name(plan)
    if root in READ_ONLY_COMMANDS:
        return
    if root == _EXPLAIN:
        _check_plan(spark, plan.logicalPlan())
        return
    for i, node in enumerate(_nodes(spark, plan)):
        name = _simple_name(node)
        if name not in QUERY_OPERATORS:
            raise QueryError(
                f"sql: not a read-only query: Spark parses it into {name}"
                + ("" if i == 0 else f" (inside {root})")
                + "; only queries, SHOW, DESCRIBE and EXPLAIN run here"
            )
