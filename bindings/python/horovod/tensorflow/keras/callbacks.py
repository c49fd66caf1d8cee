"""horovod.tensorflow.keras.callbacks on libhvd."""
from hvd.keras.callbacks import (BestModelCheckpoint,  # noqa: F401
                                 BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
                                 LearningRateWarmupCallback, MetricAverageCallback)
