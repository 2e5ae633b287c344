"""Task plugins, one per module, each registered by name in ``suite.task.TASKS`` with a config in
``suite/conf/task/<name>.yaml``."""
