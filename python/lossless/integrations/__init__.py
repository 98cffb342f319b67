"""Adapters that put lossless under agent frameworks, each an optional extra:
``lossless[openai-agents]`` (:mod:`lossless.integrations.openai_agents`). A module
here imports its framework; nothing else in the package imports these modules."""
