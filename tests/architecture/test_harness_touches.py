"""The AST rule of the plugin edge catches each kind of harness-internal touch it names."""

from __future__ import annotations

import pytest
from harness_touches import defined_private_names, touches

OWN = defined_private_names(["_MARK = '_ours_marker'\n\nclass A:\n    def _helper(self): ..."])
METHODS = {"process_results", "evaluate", "match_tasks"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import lm_eval._cli.run\n", "1: imports the private harness module lm_eval._cli.run"),
        (
            "from lm_eval.tasks import _yaml_loader\n",
            "1: imports private harness names (lm_eval.tasks: _yaml_loader)",
        ),
        (
            "from lm_eval import evaluator_utils\nf = evaluator_utils._compute_task_aggregations\n",
            "2: reads the harness's private evaluator_utils._compute_task_aggregations",
        ),
        (
            "def f(task):\n    return task._metric_fn_list\n",
            "2: reads task._metric_fn_list, a private name this project does not define",
        ),
        (
            "def f(tm):\n    return getattr(tm, '_parser')\n",
            "2: getattr of the private name '_parser'",
        ),
        (
            "from lm_eval import evaluator\nevaluator.evaluate = print\n",
            "2: assigns the harness's evaluator.evaluate",
        ),
        (
            "import lm_eval\ndel lm_eval.simple_evaluate\n",
            "2: assigns the harness's lm_eval.simple_evaluate",
        ),
        (
            "from lmms_eval.api import registry\nregistry.METRIC_REGISTRY['orca'] = len\n",
            "2: assigns the harness's registry.METRIC_REGISTRY['orca']",
        ),
        (
            "from lm_eval.api import model\nsetattr(model, 'x', 1)\n",
            "2: setattr on the harness's model",
        ),
        (
            "import sys\nsys.modules['lm_eval.utils'].make_table = str\n",
            "2: assigns the harness's sys.modules['lm_eval.utils'].make_table",
        ),
        (
            "def wire(task, wrapper):\n    task.process_results = wrapper\n",
            "2: replaces the harness method task.process_results",
        ),
        (
            "def wire(manager_cls, choose):\n    setattr(manager_cls, 'match_tasks', choose)\n",
            "2: setattr replaces the harness method 'match_tasks'",
        ),
    ],
    ids=lambda value: value.split("\n")[0][:40] if "\n" in value else None,
)
def test_each_kind_of_touch_is_caught_with_its_line(source, expected):
    assert touches(source, OWN, METHODS) == [expected]


def test_public_api_subclass_state_and_own_private_names_are_not_touches():
    source = (
        "from lm_eval.api.task import ConfigurableTask\n"
        "from lm_eval.api.registry import model_registry\n"
        "class AquaTask(ConfigurableTask):\n"
        "    def download(self, kwargs=None):\n"
        "        self.dataset = {}\n"
        "        self.config.metadata = {}\n"
        "        self._helper()\n"
        "model_registry.register('aqua-random', target='m:C')\n"
        "def f(point, thing):\n"
        "    point._replace(x=1)\n"
        "    getattr(thing, _MARK, None)\n"
        "    made = object()\n"
        "    made.evaluate = None\n"
        "_MARK = '_ours_marker'\n"
    )
    assert touches(source, OWN, METHODS) == []
