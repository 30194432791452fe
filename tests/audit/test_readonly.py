"""``audit sql``'s read-only check (:mod:`streaming.audit.readonly`) against Spark's real
parser: every write statement Spark SQL and Delta have is refused, read-only ones pass, and
the issue-15 bypass (a raw string literal that fooled the old text scan) neither passes nor
adds a commit to a table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from streaming.audit import QueryError
from streaming.audit.readonly import check_read_only, plan_node_names
from streaming.cli import main
from tests.audit.conftest import AuditTables

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

READ_ONLY = [
    "SELECT 1",
    "  select * from rebalance_events",
    "(SELECT 1)",
    "WITH x AS (SELECT 1 AS a) SELECT * FROM x",
    "-- a comment\nSELECT 'DELETE' AS word",
    "/* INSERT */ SELECT `update` FROM t",
    "SELECT r'\\' AS s",
    "SELECT * FROM t WHERE a IN (SELECT b FROM u) AND EXISTS (SELECT 1 FROM v)",
    "SELECT a, count(*) FROM t JOIN u USING (a) GROUP BY a HAVING count(*) > 1 ORDER BY a",
    "SELECT a FROM t UNION ALL SELECT a FROM u EXCEPT SELECT a FROM v",
    "SELECT *, row_number() OVER (PARTITION BY g ORDER BY ts) FROM t LIMIT 5 OFFSET 1",
    "SELECT * FROM t VERSION AS OF 1",
    "SELECT * FROM range(3)",
    "SELECT explode(array(1, 2))",
    "SHOW TABLES",
    "SHOW COLUMNS IN rebalance_events",
    "DESCRIBE rebalance_events",
    "DESCRIBE HISTORY delta.`/tmp/x`",
    "DESCRIBE DETAIL delta.`/tmp/x`",
    "EXPLAIN SELECT 1",
    "VALUES (1)",
    "TABLE t",
    "FROM rebalance_events SELECT group_id",
]

#: every writing (or state-changing) statement of Spark SQL and Delta, and the root node
#: Spark's parser makes of it (the name the error gives)
WRITES = [
    (r"WITH x AS (SELECT r'\' AS s) INSERT INTO t SELECT * FROM x --'", "InsertIntoStatement"),
    ("INSERT INTO t SELECT 1", "InsertIntoStatement"),
    ("INSERT OVERWRITE t SELECT 1", "InsertIntoStatement"),
    ("INSERT INTO t REPLACE WHERE a = 1 SELECT 1", "OverwriteByExpression"),
    ("FROM s INSERT INTO t SELECT *", "InsertIntoStatement"),
    ("INSERT OVERWRITE DIRECTORY '/tmp/x' USING parquet SELECT 1", "InsertIntoDir"),
    ("DELETE FROM t", "DeleteFromTable"),
    ("UPDATE t SET a = 1", "UpdateTable"),
    ("MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE", "MergeIntoTable"),
    ("CREATE TABLE t (a INT)", "CreateTable"),
    ("CREATE TABLE t AS SELECT 1", "CreateTableAsSelect"),
    ("REPLACE TABLE t AS SELECT 1", "ReplaceTableAsSelect"),
    ("CREATE TABLE t SHALLOW CLONE s", "CloneTableStatement"),
    ("CREATE TEMPORARY VIEW rebalance_events AS SELECT 1", "CreateViewCommand"),
    ("CREATE VIEW v AS SELECT 1", "CreateView"),
    ("CREATE DATABASE d", "CreateNamespace"),
    ("CREATE FUNCTION f AS 'x.Y'", "CreateFunction"),
    ("DROP TABLE t", "DropTable"),
    ("DROP VIEW v", "DropView"),
    ("ALTER TABLE t ADD COLUMN c INT", "AddColumns"),
    ("ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')", "SetTableProperties"),
    ("TRUNCATE TABLE t", "TruncateTable"),
    ("CACHE TABLE t", "CacheTable"),
    ("UNCACHE TABLE t", "UncacheTable"),
    ("CLEAR CACHE", "ClearCacheCommand"),
    ("REFRESH TABLE t", "RefreshTable"),
    ("SET spark.sql.ansi.enabled = false", "SetCommand"),
    ("RESET", "ResetCommand"),
    ("USE d", "SetCatalogAndNamespace"),
    ("ADD JAR /tmp/x.jar", "AddJarsCommand"),
    ("LOAD DATA INPATH '/tmp/x' INTO TABLE t", "LoadData"),
    ("MSCK REPAIR TABLE t", "RepairTable"),
    ("ANALYZE TABLE t COMPUTE STATISTICS", "AnalyzeTable"),
    ("OPTIMIZE t", "OptimizeTableCommand"),
    ("VACUUM t", "VacuumTableCommand"),
    ("RESTORE TABLE t TO VERSION AS OF 1", "RestoreTableStatement"),
    ("REORG TABLE t APPLY (PURGE)", "DeltaReorgTable"),
    ("CONVERT TO DELTA parquet.`/tmp/x`", "ConvertToDeltaCommand"),
    ("GENERATE symlink_format_manifest FOR TABLE t", "DeltaGenerateCommand"),
    ("EXECUTE IMMEDIATE 'DELETE FROM t'", "UnresolvedExecuteImmediate"),
    ("BEGIN DELETE FROM t; END", "CompoundBody"),
    ("DECLARE x INT", "CreateVariable"),
    ("SET VARIABLE x = 1", "SetVariable"),
    ("CALL sys.f()", "Call"),
    ("EXPLAIN DELETE FROM t", "DeleteFromTable"),
]


@pytest.mark.parametrize("query", READ_ONLY)
def test_read_only_statements_pass(spark: SparkSession, query: str) -> None:
    check_read_only(spark, query)


@pytest.mark.parametrize(("query", "node"), WRITES)
def test_every_write_statement_is_refused_naming_its_plan(
    spark: SparkSession, query: str, node: str
) -> None:
    expected = f"sql: not a read-only query: Spark parses it into {node}"
    with pytest.raises(QueryError, match=expected):
        check_read_only(spark, query)


def test_cte_definitions_and_subqueries_are_walked(spark: SparkSession) -> None:
    names = plan_node_names(
        spark, "WITH x AS (SELECT * FROM a) SELECT * FROM x WHERE b IN (SELECT c FROM d)"
    )
    assert names[0] == "UnresolvedWith"
    assert names.count("UnresolvedRelation") == 3, " ".join(names)  # a (CTE), x, d (subquery)


def test_empty_and_unparsable_statements(spark: SparkSession) -> None:
    with pytest.raises(QueryError, match="empty"):
        check_read_only(spark, "   ")
    with pytest.raises(QueryError, match=r"sql: .*PARSE_SYNTAX_ERROR"):
        check_read_only(spark, "SELECT 1 +")
    with pytest.raises(QueryError, match=r"sql: .*PARSE_SYNTAX_ERROR"):
        check_read_only(spark, "SELECT 1; DELETE FROM t")


def _versions(spark: SparkSession, path: Path) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count())


def test_the_raw_string_bypass_exits_2_and_writes_nothing(
    spark: SparkSession, audit_tables: AuditTables, capsys: pytest.CaptureFixture[str]
) -> None:
    table = audit_tables.base / "partition_lag"
    before = _versions(spark, table)
    query = (
        r"WITH x AS (SELECT r'\' AS s) INSERT INTO delta.`" + str(table) + "` "
        r"SELECT * FROM partition_lag --'"
    )
    code = main(["audit", "sql", query, "--delta-path", str(audit_tables.base)])
    _, err = capsys.readouterr()
    assert code == 2, err
    assert "InsertIntoStatement" in err and len(err.strip().splitlines()) == 1
    assert _versions(spark, table) == before
