"""Planning scenarios (filters, tags, blockedBy, next_todos, the compact and tree views), run over HTTP and stdio.

Like ``helpers``' scenarios, each keeps to its own id prefix and narrows every list to its own todos (with
``under`` or ``tag``), so they can share one session with the others. By theme: ``fields`` (the seed's answers,
tags, blockedBy), ``filters``, ``next_steps`` (next_todos), ``views`` (compact and tree) and ``idempotence``;
``common`` holds what they share.
"""
