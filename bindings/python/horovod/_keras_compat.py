"""What Horovod-era TensorFlow 2 scripts call on Keras objects and Keras 3 changed.

Up to TensorFlow 2.10 an optimizer's variables were a method (Horovod's examples call
hvd.broadcast_variables(opt.variables(), root_rank=0)); Keras 3 made them a property
holding a list, and calling the list fails. The `horovod` stand-in applies
callable_optimizer_variables() when imported, so that those scripts run unchanged:
the property then returns a list that may also be called, giving the same list.
Nothing else about the optimizer changes.

Horovod's Keras examples also pass `experimental_run_tf_function=False` to
`Model.compile()`, a TensorFlow 2.0-2.15 argument that Keras 3 refuses as unknown;
compile_accepts_run_tf_function() lets compile() take it and drop it (Keras 3 runs the
train step in a tf.function unless run_eagerly=True, which is what the argument chose).
"""
import functools



class CallableList(list):
    """A list that, called with no arguments, returns a copy of itself."""

    def __call__(self):
        return list(self)


def callable_optimizer_variables():
    """Makes Keras 3 optimizers' `variables` callable as well; a no-op without Keras 3
    or when applied already."""
    try:
        import keras
    except ImportError:
        return
    for cls in keras.optimizers.Optimizer.__mro__:
        attribute = cls.__dict__.get("variables")
        if isinstance(attribute, property):
            break
    else:
        return
    if getattr(attribute.fget, "_hvd_callable", False):
        return

    def variables(self):
        return CallableList(attribute.fget(self))
    variables._hvd_callable = True
    setattr(cls, "variables", property(variables, doc=attribute.__doc__))


def compile_accepts_run_tf_function():
    """Makes keras.Model.compile() accept and ignore `experimental_run_tf_function`; a
    no-op without Keras 3 or when applied already."""
    try:
        import keras
    except ImportError:
        return
    original = keras.Model.compile
    if getattr(original, "_hvd_accepts_run_tf_function", False):
        return

    @functools.wraps(original)
    def compile(self, *args, experimental_run_tf_function=None, **kwargs):
        return original(self, *args, **kwargs)
    compile._hvd_accepts_run_tf_function = True
    keras.Model.compile = compile
