"""Bundles the engine: the CLI jar goes into the package (as PySpark carries Spark's jars).

``pip install ./agentnest-python`` from a checkout builds the jar with the repository's launcher
when it is missing (Maven Wrapper, Java 17), then copies it into the wheel.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
JAR = REPO / "agentnest-cli" / "target" / "agentnest.jar"


class BuildWithEngine(build_py):
    def run(self) -> None:
        super().run()
        if not JAR.is_file():
            launcher = REPO / "agentnest"
            if not launcher.is_file():
                raise SystemExit(
                    f"the engine jar {JAR} is missing and {launcher} is not there to build it: "
                    "build from a full AgentNest checkout"
                )
            # '--version' builds the CLI without touching the host (no engine setup).
            subprocess.run([str(launcher), "--version"], check=True)
        dest = Path(self.build_lib) / "agentnest" / "_engine_jar"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(JAR, dest / "agentnest.jar")


setup(cmdclass={"build_py": BuildWithEngine})
