"""horovod.runner.util.threads: the thread helpers Horovod's test utilities import."""
import threading


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Starts target(*args) in a new (daemon) thread and returns the thread. silent:
    exceptions from target are swallowed instead of printed."""
    if silent:
        def run(*a):
            try:
                target(*a)
            except BaseException:  # noqa: BLE001 - asked to stay silent
                pass
        fn = run
    else:
        fn = target
    thread = threading.Thread(target=fn, args=args, name=name, daemon=daemon)
    thread.start()
    return thread


def on_event(event, func, args=(), stop=None, check_interval_seconds=1.0, silent=False):
    """Runs func(*args) in a thread once `event` is set (unless `stop` is set first)."""
    def wait_then_run():
        while not event.wait(check_interval_seconds):
            if stop is not None and stop.is_set():
                return
        if stop is None or not stop.is_set():
            func(*args)
    return in_thread(wait_then_run, silent=silent)
