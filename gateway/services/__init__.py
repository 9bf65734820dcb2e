"""The gateway's use cases, one room per concept; the tree reads top to bottom:

workflows -> jobs -> routing -> lifecycle -> images -> data -> sites | money

(enforced by the `services` import contract in pyproject.toml). Routes, the worker and the
admin CLI call services; services call repositories and pure rules, and flush, never
commit: the caller's unit of work commits. `cursors` (paging) and `projects` (membership)
are shared by several rooms.
"""
