"""The Todos REST API: the MCP tools' contract over HTTP.

The request bodies are the tools' own input schemas, read by the same code, so a problem reads the same
sentence here as in an agent's tool result; the answers are ``todos.formatting``'s JSON. Todo ids are chosen
by people and agents and may hold any character but whitespace (a slash included), so the id is everything
between ``/api/todos/`` and the last slash (or the action).

``schemas`` holds the request bodies and parameters as the OpenAPI document shows them, ``views`` the views,
``urls`` the routes under ``/api/todos/``.
"""
