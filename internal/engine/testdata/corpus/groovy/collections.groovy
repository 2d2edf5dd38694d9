import groovy.json.JsonOutput
import groovy.json.JsonSlurper

def text = '''
{"team": "core", "members": [
  {"name": "Ada", "lang": "groovy", "commits": 42},
  {"name": "Linus", "lang": "c", "commits": 97},
  {"name": "Grace", "lang": "cobol", "commits": 13},
  {"name": "Guido", "lang": "python", "commits": 64},
  {"name": "James", "lang": "groovy", "commits": 28}
]}
'''
def data = new JsonSlurper().parseText(text)

def members = data.members
println "Team ${data.team}: ${members*.name.join(', ')}"

def byLang = members.groupBy { it.lang }
byLang.sort().each { lang, ms ->
    println "${lang.padRight(7)} ${ms.size()} member(s), ${ms.sum { it.commits }} commits"
}

def total = members.inject(0) { acc, m -> acc + m.commits }
println "total commits: $total"

def busiest = members.max { it.commits }
println "busiest: ${busiest.name} (${busiest.commits})"

def squares = (1..10).findAll { it % 2 == 0 }.collect { it ** 2 }
println "even squares: $squares"

def nickname = members.find { it.name == 'Bjarne' }?.name ?: 'nobody'
println "found: $nickname"

def summary = [team: data.team, top: members.sort { -it.commits }.take(2)*.name]
println JsonOutput.toJson(summary)
