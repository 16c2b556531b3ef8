package natsnet

import (
	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// checkpointOf turns a stage's snapshot into the message that carries it.
func checkpointOf(runID string, cfg pipeline.StageConfig, s pipeline.StageState) *messages.Checkpoint {
	return protocol.CheckpointOf(protocol.Run{ID: runID}, cfg, s)
}

var (
	stageStateOf = protocol.StageStateOf
	seconds      = protocol.Seconds
)
