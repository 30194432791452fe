"""Remove from a folder of resolved jars every artifact the pyspark wheel already ships.

Spark must load its own Scala, Hadoop, Parquet, Jackson, log4j... from ``pyspark/jars``;
older copies pulled in transitively by the Kafka source or Delta would shadow or clash with
them. An artifact is identified by its file name without the version.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pyspark

_VERSION = re.compile(r"-\d[\w.\-]*\.jar$")


def artifact(name: str) -> str:
    return _VERSION.sub("", name)


def main(folder: str) -> int:
    shipped = {artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    removed = []
    for jar in sorted(Path(folder).glob("*.jar")):
        if artifact(jar.name) in shipped:
            jar.unlink()
            removed.append(jar.name)
    kept = sorted(p.name for p in Path(folder).glob("*.jar"))
    print(f"spark jars: kept {len(kept)}, dropped {len(removed)} already in pyspark/jars")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
