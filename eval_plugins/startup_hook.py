"""Start-up hook: plain `lm_eval` sees the AQUA tasks, our models and `metric: orca`;
plain `lmms-eval` sees `metric: orca`.

Neither harness discovers metric plugins. The package installs a `.pth` file that calls
`install()` at every Python start; `install()` only puts a finder on `sys.meta_path` that
answers for three lm-eval and two lmms-eval modules and passes on every other import. When
those modules finish importing, it hands them to `eval_plugins.lm_eval.plugin` (task folder
indexed, models and metric registered, audio cache keys) or
`eval_plugins.lmms_eval.plugin` (metric registered, judge checked before generation). A
process that imports neither pays for this module and one dictionary lookup per import.
Standard library only, and nothing here may raise: any failure ends in one warning and the
harness as it is.
"""

from __future__ import annotations

import os
import sys

# Nothing else is imported at start-up: `logging` and `typing` alone would cost milliseconds.

# Set to 0 / false / off / no to switch the hook off (plain lm-eval and lmms-eval, untouched).
ENV_SWITCH = "AQUA_LM_EVAL_HOOK"
OFF_VALUES = frozenset({"0", "false", "off", "no"})
# lm-eval module -> function of eval_plugins.lm_eval.plugin called once it has imported.
TRIGGERS = {
    "lm_eval.api.model": "on_model",
    "lm_eval.tasks.manager": "on_task_manager",
    "lm_eval.evaluator": "on_evaluator",
}
# lmms-eval module -> function of eval_plugins.lmms_eval.plugin called once it has imported.
LMMS_TRIGGERS = {
    "lmms_eval.evaluator": "on_evaluator",
    "lmms_eval.__main__": "on_cli",
}
PLUGINS = {"lm-eval": "eval_plugins.lm_eval.plugin", "lmms-eval": "eval_plugins.lmms_eval.plugin"}


def harness_of(fullname: str) -> str:
    """Which harness a trigger module belongs to (its plugin module is PLUGINS[harness])."""
    return "lmms-eval" if fullname in LMMS_TRIGGERS else "lm-eval"


def enabled(environ: dict[str, str] | None = None) -> bool:
    """Whether the hook is switched on (it is unless AQUA_LM_EVAL_HOOK says off)."""
    environ = os.environ if environ is None else environ
    return environ.get(ENV_SWITCH, "").strip().lower() not in OFF_VALUES


class LmEvalImportHook:
    """A meta-path finder for lm-eval's trigger modules only: their real spec, with a call added."""

    def __init__(self) -> None:
        self.pending = {**TRIGGERS, **LMMS_TRIGGERS}
        self.failed = False

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        """A trigger module's spec, calling the plugin once it has executed; else None."""
        if fullname not in self.pending:
            return None
        try:
            spec = self._real_spec(fullname, path, target)
            loader = getattr(spec, "loader", None)
            if loader is None or not hasattr(loader, "exec_module"):
                return None
            execute = loader.exec_module

            def exec_module(module: object) -> None:
                execute(module)
                self.fire(fullname, module)

            # The loader instance belongs to this one module: its own attribute shadows the
            # class's method, and the module keeps the real loader as __loader__.
            loader.exec_module = exec_module
            return spec
        except Exception as err:  # a hook must never break an import
            self.fail(f"cannot watch {fullname} ({err!r})")
            return None

    def _real_spec(self, fullname: str, path: object, target: object) -> object:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def fire(self, fullname: str, module: object) -> None:
        """Hand an imported trigger module to its plugin function; on failure warn once, stop."""
        action = self.pending.pop(fullname, None)
        if not self.pending:
            self.remove()
        if action is None or self.failed:
            return
        harness = harness_of(fullname)
        try:
            plugin = __import__(PLUGINS[harness], fromlist=["_"])
            problem = plugin.unsupported_version()
            if problem:
                self.fail(problem, harness)
                return
            getattr(plugin, action)(module)
        except RuntimeError as err:
            # A refusal of the version gate (eval_plugins.seams): its one line, as it is.
            self.fail(
                str(err) if type(err) is RuntimeError else f"{action} failed ({err!r})", harness
            )
        except Exception as err:
            self.fail(f"{action} failed ({err!r})", harness)

    def fail(self, reason: str, harness: str = "lm-eval") -> None:
        """One warning for the whole process; the harness then runs without our additions."""
        self.stop()
        try:
            import logging

            without = (
                "plain lmms-eval works without metric orca"
                if harness == "lmms-eval"
                else "Plain lm_eval works without the AQUA tasks, models and metric orca; "
                "`aqua eval` loads them explicitly"
            )
            logging.getLogger(__name__).warning(
                "aqua-bench-eval: the %s start-up hook is off for this run: %s. %s "
                "(%s=0 silences this hook).",
                harness,
                reason,
                without,
                ENV_SWITCH,
            )
        except Exception:
            pass

    def stop(self) -> None:
        """Act on nothing more in this process."""
        self.failed = True
        self.pending.clear()
        self.remove()

    def remove(self) -> None:
        """Leave sys.meta_path: nothing is left to watch."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def install() -> LmEvalImportHook | None:
    """Watch for lm-eval's imports (called from the installed .pth file); never raises."""
    try:
        if not enabled():
            return None
        for finder in sys.meta_path:
            if isinstance(finder, LmEvalImportHook):
                return finder
        hook = LmEvalImportHook()
        if any(name in sys.modules for name in TRIGGERS):
            # Too late to watch (lm-eval imported before site ran): say so rather than half-act.
            hook.fail("lm-eval was imported before the hook was installed")
            return None
        if any(name in sys.modules for name in LMMS_TRIGGERS):
            hook.fail("lmms-eval was imported before the hook was installed", "lmms-eval")
            return None
        sys.meta_path.insert(0, hook)
        return hook
    except Exception:
        return None
