"""The REST API's shared pieces (``api.base``): who is calling, how errors read, the schema and its pages.

Each app's API views build on them; ``api.urls`` gathers their URLs, which ``config.urls`` mounts.
"""
