"""The controller's gRPC server: ControllerService (brokers call it), health and reflection."""
