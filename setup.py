"""The one packaging step pyproject.toml cannot declare: the start-up hook's `.pth` file.

A `.pth` file runs its `import` line at every Python start; it has to sit at the top of
site-packages, where no package data can go. Everything else is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HOOK_FILE = "aqua_bench_eval_lm_eval_hook.pth"
# eval_plugins.startup_hook is standard-library only and never raises.
HOOK_LINE = "import eval_plugins.startup_hook as hook; hook.install()\n"


class BuildPyWithHook(build_py):
    """build_py that also writes the hook's `.pth` file at the top of the built tree."""

    def run(self) -> None:
        super().run()
        self.mkpath(self._hook_folder())
        Path(self._hook_folder(), HOOK_FILE).write_text(HOOK_LINE, encoding="utf-8")

    def _hook_folder(self) -> str:
        # An editable wheel is assembled from the install folder, not from build_lib.
        if getattr(self, "editable_mode", False):
            return self.get_finalized_command("install").install_lib
        return self.build_lib

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self._hook_folder(), HOOK_FILE))]


setup(cmdclass={"build_py": BuildPyWithHook})
