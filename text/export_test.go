package text

// MayHoldSecret is mayHoldSecret, for FuzzRedact (package text_test,
// which also uses validate).
var MayHoldSecret = mayHoldSecret
