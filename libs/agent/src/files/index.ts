// Attachments stored as files: which a model takes, how a prompt's are taken, how they reach the model.

export * from './attachment-support';
export * from './attachment-intake';
export * from './file-attachments.gateway';
