"""The viewer of a lossless database: what the model saw at turn N, and what had
been compacted away. :mod:`lossless.ui.requests` puts a request together again
from its ``request_built`` event and the stored rows."""
