"""Walk-arounds of session 32's relaxations, each refused by the static checker itself (not left to the run time).

Each is one of session 32's honest candidates (``tests/candidates/honest/s32_*``, accepted whole by the suite) with one
edit: a class deriving from a PyTorch layer that reaches the layer's own ``forward`` (``super().forward``, bound,
through ``getattr``, on some rows only, past its own forward with a two-argument ``super``, or with no forward at all);
a classmethod registry whose decorator labels the class with a method's name, a lambda, a private or special name,
returns another class, rebinds ``cls``, is a staticmethod, takes a computed argument, or whose table is rebound; a
loss module called in a loop, through an alias, made locally or in a comprehension, or reducing its input;
``str.format(**self.__dict__)`` reaching attributes of fields, private or nested fields, and ``dict(**self.__dict__)``;
``torch.tensor`` of host data.
"""

from pathlib import Path

import pytest

from evaluator.static_check import check_source

HONEST = Path(__file__).resolve().parents[1] / "candidates" / "honest"

_LAYER_FORWARD = '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()'''
_OWN_FORWARD = '''        x2 = x.reshape(-1, x.shape[-1]).contiguous()'''
_DECORATOR = '''            op_cls.name = name
            cls.op_registry[name] = op_cls
            return op_cls'''
_LOSS_CALL = '''        return self.loss_fn(logits, target)'''
_FORMAT = '''"{normalized_shape}, eps={eps}".format(**self.__dict__)'''
_SCALAR = '''        one = torch.tensor(1.0, device=x.device)'''

# (name, honest file, text it holds, what replaces it)
WALKAROUNDS = [
    ("layer_super_forward", "s32_layernorm_nn_subclass.py", _LAYER_FORWARD,
     "    def forward(self, x):\n        return super().forward(x)\n\n    def unused(self, x):\n" + _OWN_FORWARD),
    ("layer_super_forward_bound", "s32_layernorm_nn_subclass.py", _OWN_FORWARD,
     "        f = super().forward\n        if x.shape[0] > 1:\n            return f(x)\n" + _OWN_FORWARD),
    ("layer_getattr_super_forward", "s32_layernorm_nn_subclass.py", _OWN_FORWARD,
     "        if x.shape[0] > 1:\n            return getattr(super(), 'forward')(x)\n" + _OWN_FORWARD),
    ("layer_super_forward_on_odd_rows", "s32_layernorm_nn_subclass.py", _OWN_FORWARD,
     "        if x.shape[0] % 2:\n            return super().forward(x)\n" + _OWN_FORWARD),
    ("layer_two_arg_super_skips_own_forward", "s32_layernorm_nn_subclass.py", _OWN_FORWARD,
     "        if x.shape[0] % 2:\n            return super(ModelNew, self).forward(x)\n" + _OWN_FORWARD),
    ("layer_reset_parameters_in_forward", "s32_layernorm_nn_subclass.py", _OWN_FORWARD,
     "        self.reset_parameters()\n" + _OWN_FORWARD),
    ("layer_without_forward", "s32_layernorm_nn_subclass.py", _LAYER_FORWARD,
     "    def unused(self, x: torch.Tensor) -> torch.Tensor:\n" + _OWN_FORWARD),
    ("registry_label_a_method", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR.replace("op_cls.name = name", "op_cls.forward_cuda = name")),
    ("registry_label_dispatch", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR.replace("op_cls.name = name", "op_cls.dispatch_forward = name")),
    ("registry_label_a_lambda", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR.replace("op_cls.name = name", "op_cls.name = lambda self, x: x")),
    ("registry_label_private", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR.replace("op_cls.name = name", "op_cls._forward_method = name")),
    ("registry_label_special", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR.replace("op_cls.name = name", "op_cls.__call__ = name")),
    ("registry_returns_another_class", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR.replace("return op_cls", "return CustomOp")),
    ("registry_rebinds_cls", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR.replace("op_cls.name = name", "cls = op_cls")),
    ("registry_table_rebound", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR + "\n\n        CustomOp.op_registry = {}"),
    ("registry_staticmethod", "s32_swiglu_customop_registry.py", "    @classmethod\n    def register",
     "    @staticmethod\n    def register"),
    ("registry_computed_argument", "s32_swiglu_customop_registry.py", '@CustomOp.register("silu_and_mul")',
     "@CustomOp.register(F.silu)"),
    ("loss_module_in_a_loop", "s32_cross_entropy_loss_module.py", _LOSS_CALL,
     "        out = 0\n        for i in range(2):\n            out = out + self.loss_fn(logits[i::2], target[i::2])\n"
     "        return out / 2"),
    ("loss_module_through_an_alias", "s32_cross_entropy_loss_module.py", _LOSS_CALL,
     "        fn = self.loss_fn\n        return sum(fn(a, b) for a, b in zip(logits.chunk(2), target.chunk(2))) / 2"),
    ("loss_module_made_locally", "s32_cross_entropy_loss_module.py", _LOSS_CALL,
     "        m = CrossEntropyLoss(ignore_index=-100, reduction='mean')\n"
     "        return sum(m(a, b) for a, b in zip(logits.chunk(2), target.chunk(2))) / 2"),
    ("loss_module_in_a_comprehension", "s32_cross_entropy_loss_module.py", _LOSS_CALL,
     "        return sum([self.loss_fn(a, b) for a, b in zip(logits.chunk(2), target.chunk(2))]) / 2"),
    ("loss_module_reduces_its_input", "s32_cross_entropy_loss_module.py",
     "loss = loss.sum() / (target != self.ignore_index).sum()",
     "loss = loss.sum() / (target != self.ignore_index).sum() + input.sum() * 0"),
    ("loss_unpacked_from_the_input", "s32_cross_entropy_loss_module.py", "        loss, z_loss = cross_entropy_loss(",
     "        loss, z_loss = input, input\n        _unused = cross_entropy_loss("),
    ("format_attribute_of_a_field", "s32_layernorm_extra_repr_dict.py", _FORMAT,
     '"{weight.data}".format(**self.__dict__)'),
    ("format_nested_field", "s32_layernorm_extra_repr_dict.py", _FORMAT, '"{eps:{eps}}".format(**self.__dict__)'),
    ("format_private_field", "s32_layernorm_extra_repr_dict.py", _FORMAT,
     '"{_parameters}".format(**self.__dict__)'),
    ("format_positional_field", "s32_layernorm_extra_repr_dict.py", _FORMAT, '"{0}".format(**self.__dict__)'),
    ("dict_copy_of_dunder_dict", "s32_layernorm_extra_repr_dict.py", _FORMAT, "str(dict(**self.__dict__))"),
    ("tensor_of_host_data", "s32_rmsnorm_scalar_tensor.py", _SCALAR,
     "        one = torch.tensor(x2.tolist(), device=x.device)"),
    ("tensor_of_a_table", "s32_rmsnorm_scalar_tensor.py", _SCALAR,
     "        table = [1.0, 2.0]\n        one = torch.tensor(table, device=x.device)"),
    ("tensor_of_an_attribute", "s32_rmsnorm_scalar_tensor.py", _SCALAR,
     "        one = torch.tensor(self.eps, device=x.device)"),
    ("numbers_registers_a_class", "s32_layernorm_numbers_integral.py", "import numbers\n",
     "import numbers\n\nnumbers.Integral.register(tuple)\n"),
    ("literal_holds_code", "s32_cosine_literal_negative_dim.py", "dim: Literal[-1] = -1",
     'dim: Literal[-len("a")] = -1'),
    ("builtin_float_shadowed", "s32_causal_softmax_float_inf_constant.py",
     'NEG_INF: tl.constexpr = tl.constexpr(float("-inf"))',
     'float = lambda text: 0.0  # noqa\nNEG_INF: tl.constexpr = tl.constexpr(float("-inf"))'),
    ("submodule_made_in_forward", "s32_embedding_bag_submodule_init.py", "        return self.embedding(idx)",
     "        table = Table(8, idx.shape[0])\n        return table(idx)"),
    ("submodule_init_called_again", "s32_embedding_bag_submodule_init.py", "        return self.embedding(idx)",
     "        self.embedding.__init__(8, 8)\n        return self.embedding(idx)"),
    ("init_factory_closure_kept", "s32_embedding_bag_init_factory.py",
     "        init_method_normal(1.0)(self.embedding.weight)",
     "        self.init = init_method_normal(1.0)"),
    ("init_factory_through_an_alias", "s32_embedding_bag_init_factory.py",
     "        init_method_normal(1.0)(self.embedding.weight)",
     "        make = init_method_normal\n        make(1.0)(self.embedding.weight)"),
    ("init_factory_called_in_forward", "s32_embedding_bag_init_factory.py", "        return self.embedding(idx)",
     "        init_method_normal(1.0)(self.embedding.weight)\n        return self.embedding(idx)"),
    ("abc_base_beside_another", "s32_rmsnorm_residual_abc_base.py", "class NormBase(nn.Module, ABC):",
     "class NormBase(nn.Module, ABC, dict):"),
    # the red team of the relaxations above
    ("layer_method_kept_from_a_base_of_the_file", "s32_layernorm_nn_subclass.py", "class ModelNew(nn.LayerNorm):",
     "class Base(nn.LayerNorm):\n    pass\n\n\nclass ModelNew(Base):\n    layer_forward = Base.forward\n"),
    ("mro_walk_to_the_layer", "s32_layernorm_nn_subclass.py", _OWN_FORWARD,
     "        if x.shape[0] % 2:\n            return type(self).mro()[1].forward(self, x)\n" + _OWN_FORWARD),
    ("base_layer_made_of_modules", "s32_layernorm_nn_subclass.py", "class ModelNew(nn.LayerNorm):",
     "class ModelNew(nn.TransformerEncoderLayer):"),
    ("base_container_layer", "s32_layernorm_nn_subclass.py", "class ModelNew(nn.LayerNorm):",
     "class ModelNew(nn.Sequential):"),
    ("registry_table_read_and_patched", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR + "\n\n        for made in cls.op_registry.values():\n"
     "            made.forward_cuda = made.forward_native"),
    ("registry_table_not_empty", "s32_swiglu_customop_registry.py",
     "    op_registry: dict[str, type[CustomOp]] = {}",
     "    op_registry: dict[str, type[CustomOp]] = {'silu': nn.SiLU}"),
    ("registry_label_training", "s32_swiglu_customop_registry.py", _DECORATOR,
     _DECORATOR.replace("op_cls.name = name", "op_cls.training = name")),
    ("format_conversion", "s32_layernorm_extra_repr_dict.py", _FORMAT, '"{eps!r}".format(**self.__dict__)'),
    ("format_field_holding_modules", "s32_layernorm_extra_repr_dict.py", "        self.normalized_shape = (hidden,)",
     "        self.normalized_shape = [nn.Linear(1, 1)]"),
    ("loss_module_called_three_times", "s32_cross_entropy_loss_module.py", _LOSS_CALL,
     "        a = self.loss_fn(logits, target)\n        b = self.loss_fn(logits, target)\n"
     "        c = self.loss_fn(logits, target)\n        return (a + b + c) / 3"),
    ("loss_module_held_in_a_list", "s32_cross_entropy_loss_module.py",
     '        self.loss_fn = CrossEntropyLoss(ignore_index=-100, reduction="mean")',
     '        self.losses = [CrossEntropyLoss(ignore_index=-100, reduction="mean")]\n'
     "        self.loss_fn = self.losses[0]"),
    # a second red team (static only): each edit pair is applied in turn
    ("method_through_type_of_self", "s32_rmsnorm_scalar_tensor.py",
     ("    def forward(self, x: torch.Tensor) -> torch.Tensor:", _SCALAR),
     ("    def native(self, x):\n        return torch.nn.functional.rms_norm(x, x.shape[-1:], self.weight, self.eps)"
      "\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:",
      "        if x.shape[0] > 1:\n            return type(self).native(self, x)\n" + _SCALAR)),
    ("patching_forward_through_an_alias", "s32_layernorm_nn_subclass.py", _OWN_FORWARD,
     _OWN_FORWARD + "\n        _cls = ModelNew\n        _cls.forward = nn.LayerNorm.forward"),
    ("patching_held_forward_in_its_init", "s32_embedding_bag_submodule_init.py",
     "        nn.init.normal_(self.weight)",
     "        nn.init.normal_(self.weight)\n        self.forward = self.native"),
    ("layer_held_without_forward", "s32_embedding_bag_submodule_init.py",
     ("class Table(nn.Module):", "        self.embedding = Table(vocab, dim)", "        return self.embedding(idx)"),
     ("class Plain(nn.LayerNorm):\n    pass\n\n\nclass Table(nn.Module):",
      "        self.embedding = Table(vocab, dim)\n        self.norm = Plain(dim)",
      "        return self.norm(self.embedding(idx))")),
    ("super_kept_in_a_name", "s32_layernorm_nn_subclass.py", _OWN_FORWARD,
     "        sup = super()\n        if x.shape[0] % 2:\n            return sup.forward(x)\n" + _OWN_FORWARD),
    ("lambda_kept_on_self", "s32_rmsnorm_scalar_tensor.py", (_SCALAR, "        super().__init__()"),
     ("        if x.shape[0] > 1:\n            return self.go(x)\n" + _SCALAR,
      "        super().__init__()\n        self.go = lambda t: torch.nn.functional.rms_norm(t, t.shape[-1:])")),
    ("held_module_reached_through_modules", "s32_embedding_bag_submodule_init.py",
     ("    def forward(self, idx):\n        idx = idx.contiguous()", "        return self.embedding(idx)"),
     ("    def native(self, idx):\n        return torch.nn.functional.embedding_bag(idx, self.weight)\n\n"
      "    def forward(self, idx):\n        idx = idx.contiguous()",
      "        for m in self.modules():\n            if m is not self:\n                return m.native(idx)\n"
      "        return self.embedding(idx)")),
    ("instance_made_in_a_class_body", "s32_embedding_bag_submodule_init.py",
     ("class Table(nn.Module):", "class ModelNew(nn.Module):", "        return self.embedding(idx)"),
     ("class Native(nn.Module):\n    def forward(self, idx, weight):\n"
      "        return torch.nn.functional.embedding_bag(idx, weight)\n\n\nclass Table(nn.Module):",
      "class ModelNew(nn.Module):\n    shared = Native()",
      "        return self.shared(idx, self.embedding(idx))")),
    ("bookkeeping_by_recursion", "s32_cross_entropy_loss_module.py", _LOSS_CALL,
     "        if logits.shape[0] > 1:\n"
     "            return (self(logits[:1], target[:1]) + self(logits[1:], target[1:])) / 2"
     "\n" + _LOSS_CALL),
]


# the rule each family is refused by (the layer's own functions and reductions are PyTorch's computation)
_RULES = {"layer": "torch-compute", "registry": "patching", "loss": "torch-compute", "format": "introspection",
          "dict": "introspection", "tensor": "torch-compute", "numbers": "banned-import",
          "literal": "dangerous-builtin", "builtin": "dangerous-builtin", "submodule": "torch-compute",
          "init": "torch-compute", "abc": "reference", "mro": "introspection",
          "base": "reference", "method": "torch-compute", "patching": "patching", "super": "introspection",
          "lambda": "torch-compute", "held": "torch-compute", "instance": "torch-compute",
          "bookkeeping": "torch-compute"}


@pytest.mark.parametrize("name,honest,old,new", WALKAROUNDS, ids=[w[0] for w in WALKAROUNDS])
def test_walkaround_is_refused_statically(name, honest, old, new):
    source = (HONEST / honest).read_text()
    for before, after in zip(*((old, new) if isinstance(old, tuple) else ((old,), (new,))), strict=True):
        assert source.count(before) == 1, f"{honest} no longer holds the text {name} replaces"
        source = source.replace(before, after)
    report = check_source(source, f"{name}.py")
    rule = {"layer_without_forward": "missing-entry"}.get(
        name, _RULES[name.split("_", 1)[0]])
    assert rule in {v.rule for v in report.violations}, report.violations


# honest edits of the same files that must still pass (false rejects of a static FP check of these rules)
HONEST_EDITS = [
    ("data_named_like_another_class_method", "s32_layernorm_extra_repr_dict.py", ("class ModelNew(nn.Module):",),
     ("class Settings:\n    def eps(self):\n        return 1e-5\n\n\nclass ModelNew(nn.Module):",)),
    ("module_list_of_own_blocks", "s32_embedding_bag_submodule_init.py",
     ("        self.embedding = Table(vocab, dim)", "        return self.embedding(idx)"),
     ("        self.tables = nn.ModuleList([Table(vocab, dim) for _ in range(1)])",
      "        for table in self.tables:\n            idx = table(idx)\n        return idx")),
    ("view_helper_and_reduction_in_place", "s32_cross_entropy_loss_module.py",
     ("class CrossEntropyLoss(nn.Module):", "loss = loss.sum() / (target != self.ignore_index).sum()"),
     ("def _as_1d(t):\n    return t.reshape(-1)\n\n\nclass CrossEntropyLoss(nn.Module):",
      "loss = _as_1d(loss).sum() / (target != self.ignore_index).sum()")),
]


@pytest.mark.parametrize("name,honest,old,new", HONEST_EDITS, ids=[e[0] for e in HONEST_EDITS])
def test_honest_edit_passes(name, honest, old, new):
    source = (HONEST / honest).read_text()
    for before, after in zip(old, new, strict=True):
        assert source.count(before) == 1, f"{honest} no longer holds the text {name} replaces"
        source = source.replace(before, after)
    report = check_source(source, f"{name}.py")
    assert report.ok, report.violations


@pytest.mark.parametrize("honest", sorted({w[1] for w in WALKAROUNDS}))
def test_the_honest_file_itself_passes(honest):
    report = check_source((HONEST / honest).read_text(), honest)
    assert report.ok, report.violations
