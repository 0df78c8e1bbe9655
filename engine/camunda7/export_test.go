package camunda7

// HistoryDays exposes historyDays to the package's external tests.
var HistoryDays = historyDays
